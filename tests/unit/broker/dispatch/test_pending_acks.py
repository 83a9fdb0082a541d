"""Pending acks: individual, cumulative and batch-index acks; redelivery on close or request."""

from __future__ import annotations

from magnetar.broker.dispatch import PendingAcks, ack_set_to_mask, mask_to_ack_set
from magnetar.managed_ledger import Position

A, B = (1, 1), (1, 2)


def p(e: int) -> Position:
    return Position(3, e)


def test_individual_ack_resolves_whichever_consumer_holds_it() -> None:
    pending = PendingAcks()
    pending.add(A, p(0))
    pending.add(B, p(1), batch_size=3)
    assert pending.unacked_messages(B) == 3
    out = pending.ack_individual(p(1))
    assert out.acked == (p(1),)
    assert out.released[0].consumer == B
    assert pending.unacked_messages(B) == 0
    assert len(pending) == 1
    # Duplicates and unknown positions are tolerated and still reported for the cursor.
    assert pending.ack_individual(p(1)).acked == (p(1),)
    assert pending.ack_individual(p(1), ack_set=0b10).acked == ()


def test_batch_index_acks_complete_the_entry_when_every_index_is_acked() -> None:
    pending = PendingAcks()
    pending.add(A, p(0), batch_size=3)
    out = pending.ack_individual(p(0), ack_set=0b110)  # index 0 acked
    assert out.acked == ()
    assert out.partial[0].unacked == 0b110
    assert pending.unacked_messages(A) == 2
    out = pending.ack_individual(p(0), ack_set=0b011)  # index 2 acked too (AND)
    record = pending.get(p(0))
    assert record is not None
    assert record.unacked == 0b010
    out = pending.ack_individual(p(0), ack_set=0b101)
    assert out.acked == (p(0),)
    assert p(0) not in pending


def test_ack_set_words_round_trip_in_java_bitset_layout() -> None:
    # 70 indexes, all unacked: word 0 is all ones (-1 as int64), word 1 has 6 bits.
    mask = (1 << 70) - 1
    words = mask_to_ack_set(mask)
    assert words == [-1, 0b111111]
    assert ack_set_to_mask(words) == mask
    assert mask_to_ack_set(0) == []
    assert ack_set_to_mask([-(1 << 63)]) == 1 << 63


def test_cumulative_ack_takes_everything_up_to_the_position() -> None:
    pending = PendingAcks()
    for e in range(5):
        pending.add(A, p(e), batch_size=2)
    out = pending.ack_cumulative(p(2))
    assert out.acked == (p(0), p(1), p(2))
    assert [r.position for r in pending.of(A)] == [p(3), p(4)]
    # With an ack set the entry at the position itself is only partly acked.
    out = pending.ack_cumulative(p(4), ack_set=0b10)
    assert out.acked == (p(3),)
    assert out.partial[0].position == p(4)
    assert pending.unacked_messages(A) == 1


def test_close_and_redeliver_hand_entries_back_in_order() -> None:
    pending = PendingAcks()
    for e in (4, 1, 3):
        pending.add(A, p(e), sticky_hash=7)
    pending.add(B, p(2), sticky_hash=7)
    assert pending.holders_of_hash(7) == {A, B}
    # Only positions the consumer holds are redelivered.
    taken = pending.redeliver(A, [p(3), p(2)])
    assert [r.position for r in taken] == [p(3)]
    assert p(2) in pending
    taken = pending.remove_consumer(A)
    assert [r.position for r in taken] == [p(1), p(4)]
    assert pending.holders_of_hash(7) == {B}
    assert pending.oldest() == p(2)
    assert pending.remove_consumer(A) == []


def test_redelivering_a_partly_acked_batch_keeps_its_ack_state() -> None:
    pending = PendingAcks()
    pending.add(A, p(0), batch_size=4)
    pending.ack_individual(p(0), ack_set=0b1100)
    (record,) = pending.remove_consumer(A)
    assert record.partly_acked
    assert record.unacked_count == 2
    # Re-delivered to B with the remaining bits (MESSAGE.ack_set = mask_to_ack_set(unacked)).
    again = pending.add(B, p(0), batch_size=4, unacked=record.unacked)
    assert again.unacked == 0b1100
    assert pending.unacked_messages(B) == 2
