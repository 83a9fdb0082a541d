"""The ack tracker: individual, cumulative and batch-index acks, grouping (sans-I/O)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from magnetar.client.acks import CUMULATIVE, INDIVIDUAL, AckRequest, AckTracker
from magnetar.protocol.message_id import MessageId, ack_set_from_bits, ack_set_to_bits
from magnetar.wire import pulsar_api_pb2 as pb


def mid(entry: int, index: int = -1, *, size: int = 0, ledger: int = 7) -> MessageId:
    return MessageId(ledger, entry, index, batch_size=size)


def only(requests: list[AckRequest]) -> AckRequest:
    assert len(requests) == 1, requests
    return requests[0]


def test_plain_individual_acks_group_into_one_request() -> None:
    t = AckTracker()
    t.individual(mid(1))
    t.individual(mid(2))
    t.individual(mid(1))  # duplicate
    assert not t.flush_now  # the 100 ms window is on
    req = only(t.flush())
    assert req.ack_type == INDIVIDUAL
    assert [m for m, _ in req.ids] == [mid(1), mid(2)]
    assert all(s == () for _, s in req.ids)
    assert t.flush() == []


def test_group_time_zero_flushes_now_and_group_size_limit() -> None:
    t = AckTracker(group_time_s=0)
    assert not t.flush_now
    t.individual(mid(1))
    assert t.flush_now
    t = AckTracker(max_group_size=2)
    t.individual(mid(1))
    assert not t.flush_now
    t.individual(mid(2))
    assert t.flush_now


def test_batch_without_batch_index_ack_sends_the_entry_once_all_indexes_are_acked() -> None:
    t = AckTracker(batch_index_ack=False)
    t.register_batch(mid(5), 3, [])
    t.individual(mid(5, 0, size=3))
    t.individual(mid(5, 2, size=3))
    assert t.flush() == []
    t.individual(mid(5, 1, size=3))
    req = only(t.flush())
    assert req.ids == ((mid(5), ()),)
    assert t.tracked_batches == 0


def test_batch_index_ack_sends_the_remaining_ack_set() -> None:
    t = AckTracker(batch_index_ack=True)
    t.register_batch(mid(5), 4, [])
    t.individual(mid(5, 1, size=4))
    t.individual(mid(5, 3, size=4))
    req = only(t.flush())
    ((entry, ack_set),) = req.ids
    assert entry == mid(5)
    assert ack_set_to_bits(ack_set) == 0b0101  # indexes 0 and 2 still unacked
    t.individual(mid(5, 0, size=4))
    t.individual(mid(5, 2, size=4))
    assert only(t.flush()).ids == ((mid(5), ()),)


def test_broker_ack_set_on_redelivery_counts_as_acked() -> None:
    t = AckTracker()
    t.register_batch(mid(5), 3, ack_set_from_bits(0b100))  # only index 2 left
    t.individual(mid(5, 2, size=3))
    assert only(t.flush()).ids == ((mid(5), ()),)


def test_redelivered_batch_keeps_local_acks_not_yet_seen_by_the_broker() -> None:
    t = AckTracker()
    t.register_batch(mid(5), 3, [])
    t.individual(mid(5, 0, size=3))
    t.register_batch(mid(5), 3, [])  # redelivered; broker knows nothing yet
    t.individual(mid(5, 1, size=3))
    t.individual(mid(5, 2, size=3))
    assert only(t.flush()).ids == ((mid(5), ()),)


def test_index_of_a_finished_batch_is_ignored() -> None:
    t = AckTracker()
    t.individual(mid(9, 0, size=2))
    assert t.flush() == []


def test_cumulative_plain_and_never_backwards() -> None:
    t = AckTracker()
    t.cumulative(mid(4))
    t.cumulative(mid(2))
    req = only(t.flush())
    assert req.ack_type == CUMULATIVE
    assert req.ids == ((mid(4), ()),)
    t.cumulative(mid(3))
    assert t.flush() == []
    t.individual(mid(1))  # already covered
    assert t.flush() == []


def test_cumulative_inside_a_batch_without_batch_index_ack_acks_the_previous_entry() -> None:
    t = AckTracker(batch_index_ack=False)
    t.register_batch(mid(5), 3, [])
    t.cumulative(mid(5, 0, size=3))
    assert only(t.flush()).ids == ((mid(4), ()),)
    t.cumulative(mid(5, 1, size=3))
    assert t.flush() == []  # same previous entry, sent once
    t.cumulative(mid(5, 2, size=3))
    assert only(t.flush()).ids == ((mid(5), ()),)


def test_cumulative_inside_a_batch_with_batch_index_ack_clears_the_prefix() -> None:
    t = AckTracker(batch_index_ack=True)
    t.register_batch(mid(5), 4, [])
    t.cumulative(mid(5, 1, size=4))
    req = only(t.flush())
    ((entry, ack_set),) = req.ids
    assert req.ack_type == CUMULATIVE
    assert entry == mid(5)
    assert ack_set_to_bits(ack_set) == 0b1100
    t.individual(mid(5, 2, size=4))
    t.individual(mid(5, 3, size=4))
    assert only(t.flush()).ids == ((mid(5), ()),)


def test_cumulative_drops_individual_acks_it_covers() -> None:
    t = AckTracker()
    t.individual(mid(1))
    t.individual(mid(3))
    t.cumulative(mid(2))
    reqs = t.flush()
    assert [r.ack_type for r in reqs] == [CUMULATIVE, INDIVIDUAL]
    assert reqs[1].ids == ((mid(3), ()),)


def test_ack_request_command_carries_partition_and_ack_set() -> None:
    req = AckRequest(INDIVIDUAL, ((MessageId(1, 2, partition=3), (5,)),))
    cmd = req.to_command(11)
    assert cmd.type == pb.BaseCommand.ACK
    assert cmd.ack.consumer_id == 11
    (data,) = cmd.ack.message_id
    assert (data.ledger_id, data.entry_id, data.partition, list(data.ack_set)) == (1, 2, 3, [5])
    assert not data.HasField("batch_index")


@given(
    size=st.integers(1, 130),
    order=st.data(),
    batch_index_ack=st.booleans(),
)
def test_acking_every_index_in_any_order_ends_with_one_whole_entry_ack(
    size: int, order: st.DataObject, batch_index_ack: bool
) -> None:
    t = AckTracker(batch_index_ack=batch_index_ack)
    t.register_batch(mid(3), size, [])
    indexes = order.draw(st.permutations(range(size)))
    sent: list[AckRequest] = []
    for n, i in enumerate(indexes):
        t.individual(mid(3, i, size=size))
        if n % 7 == 0:
            sent += t.flush()
    sent += t.flush()
    *partial, last = [ids for req in sent for ids in req.ids]
    assert last == (mid(3), ())
    for entry, ack_set in partial:  # partial acks only with batch-index ack
        assert batch_index_ack
        assert entry == mid(3)
        assert ack_set
    assert t.tracked_batches == 0
