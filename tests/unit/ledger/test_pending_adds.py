"""The write handle's sans-I/O core: ids, quorum, in-order confirmation, ensemble change."""

from __future__ import annotations

from magnetar.ids import BookieId
from magnetar.ledger.pending_adds import AddTracker

A, B, C, D = (BookieId(x) for x in "abcd")


def _send_all(tracker: AddTracker) -> None:
    for add, bookie in tracker.unsent():
        tracker.mark_sent(add, bookie)


def test_ids_are_dense_in_call_order_and_striped() -> None:
    tracker = AddTracker((A, B, C), write_quorum=2, ack_quorum=2)
    ids = [tracker.new_entry(b"x").entry_id for _ in range(4)]
    assert ids == [0, 1, 2, 3]
    assert tracker.targets(0) == (A, B)
    assert tracker.targets(2) == (C, A)


def test_entry_confirms_at_ack_quorum_not_before() -> None:
    tracker = AddTracker((A, B, C), write_quorum=3, ack_quorum=2)
    tracker.new_entry(b"p")
    _send_all(tracker)
    assert tracker.on_ack(0, A) == []
    assert tracker.on_ack(0, A) == []  # a duplicate ack does not count twice
    confirmed = tracker.on_ack(0, C)
    assert [a.entry_id for a in confirmed] == [0]
    assert tracker.last_add_confirmed == 0
    assert tracker.length == 1


def test_later_entry_waits_for_earlier_ones() -> None:
    tracker = AddTracker((A, B, C), write_quorum=3, ack_quorum=2)
    for _ in range(3):
        tracker.new_entry(b"p")
    _send_all(tracker)
    assert tracker.on_ack(2, A) == []
    assert tracker.on_ack(2, B) == []
    assert tracker.on_ack(1, A) == []
    assert tracker.on_ack(1, B) == []
    assert tracker.last_add_confirmed == -1
    tracker.on_ack(0, A)
    assert [a.entry_id for a in tracker.on_ack(0, C)] == [0, 1, 2]
    assert tracker.last_add_confirmed == 2


def test_ack_from_bookie_outside_write_set_is_ignored() -> None:
    tracker = AddTracker((A, B, C), write_quorum=2, ack_quorum=2)
    tracker.new_entry(b"p")  # write set A, B
    _send_all(tracker)
    tracker.on_ack(0, A)
    assert tracker.on_ack(0, C) == []


def test_ensemble_change_freezes_confirmation_and_resends_to_replacement() -> None:
    tracker = AddTracker((A, B, C), write_quorum=3, ack_quorum=3)
    for _ in range(2):
        tracker.new_entry(b"p")
    _send_all(tracker)
    tracker.on_ack(0, A)
    tracker.on_ack(0, B)
    tracker.on_ack(1, A)
    tracker.on_ack(1, C)
    tracker.begin_change()  # B failed
    assert tracker.on_ack(1, B) == []  # quorum reached, but frozen
    assert tracker.unsent() == []
    tracker.new_entry(b"q")  # appended during the change: not sent yet
    confirmed = tracker.apply_ensemble((A, D, C))
    assert confirmed == []  # B's acks no longer count
    resend = sorted((add.entry_id, bookie) for add, bookie in tracker.unsent())
    assert resend == [(0, D), (1, D), (2, A), (2, C), (2, D)]
    _send_all(tracker)
    tracker.on_ack(0, C)
    assert [a.entry_id for a in tracker.on_ack(0, D)] == [0]
    assert [a.entry_id for a in tracker.on_ack(1, D)] == [1]
    assert tracker.last_add_confirmed == 1


def test_drain_empties_everything() -> None:
    tracker = AddTracker((A, B, C), write_quorum=3, ack_quorum=2, last_add_confirmed=9)
    tracker.new_entry(b"abc")
    assert tracker.pending_bytes == 3
    assert [a.entry_id for a in tracker.drain()] == [10]
    assert tracker.pending_count == 0
    assert tracker.pending_bytes == 0


def test_forget_send_makes_the_entry_unsent_to_that_bookie_again() -> None:
    tracker = AddTracker((A, B, C), write_quorum=3, ack_quorum=2)
    tracker.new_entry(b"p")
    _send_all(tracker)
    tracker.on_ack(0, B)
    assert tracker.unsent() == []
    tracker.forget_send(0, B)
    assert [(add.entry_id, bookie) for add, bookie in tracker.unsent()] == [(0, B)]
    tracker.forget_send(7, B)  # not pending: nothing happens
    _send_all(tracker)
    tracker.on_ack(0, A)
    assert tracker.last_add_confirmed == -1  # B's earlier ack was forgotten
    assert [a.entry_id for a in tracker.on_ack(0, B)] == [0]
