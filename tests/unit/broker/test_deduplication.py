"""The deduplication core (SequenceTracker) without a loop: duplicates, in-flight resends,
failures, snapshot positions with out-of-order completions, bounds."""

from __future__ import annotations

from magnetar.broker.deduplication import DupStatus, SequenceTracker
from magnetar.broker.producer import _origin
from magnetar.managed_ledger.position import position
from magnetar.wire import pulsar_api_pb2 as pb
from tests.kit.protobuf_wire import field


def _push(t: SequenceTracker, name: str, seq: int, highest: int | None = None) -> int:
    assert t.check(name, seq, highest) is DupStatus.NOT_DUP
    return t.dispatched()


def test_persisted_ids_are_duplicates_and_others_are_not() -> None:
    t = SequenceTracker()
    for seq in range(3):
        t.recorded(_push(t, "p", seq), "p", seq, None, position(1, seq))
    assert t.check("p", 1, None) is DupStatus.DUP
    assert t.check("p", 2, None) is DupStatus.DUP
    assert t.check("q", 0, None) is DupStatus.NOT_DUP  # per producer name
    assert t.check("p", 3, None) is DupStatus.NOT_DUP
    assert t.last_sequence_id("p") == 2
    assert t.last_sequence_id("nobody") == -1


def test_batch_counts_its_highest_sequence_id() -> None:
    t = SequenceTracker()
    t.recorded(_push(t, "p", 0, 9), "p", 0, 9, position(1, 0))
    assert t.last_sequence_id("p") == 9
    assert t.check("p", 5, None) is DupStatus.DUP
    assert t.check("p", 10, 12) is DupStatus.NOT_DUP


def test_in_flight_resend_is_unknown_and_failure_lets_it_through() -> None:
    t = SequenceTracker()
    ticket = _push(t, "p", 0)
    assert t.check("p", 0, None) is DupStatus.UNKNOWN
    t.recorded(ticket, "p", 0, None, None)  # the add failed
    assert t.check("p", 0, None) is DupStatus.NOT_DUP


def test_reconnect_falls_back_to_persisted() -> None:
    t = SequenceTracker()
    t.producer_added("p")
    t.recorded(_push(t, "p", 0), "p", 0, None, position(1, 0))
    _push(t, "p", 1)  # in flight when the producer goes away
    t.producer_removed("p", now=0.0)
    assert t.check("p", 1, None) is DupStatus.NOT_DUP


def test_snapshot_position_waits_for_every_earlier_add() -> None:
    t = SequenceTracker()
    first, second, third = _push(t, "a", 0), _push(t, "b", 0), _push(t, "a", 1)
    t.recorded(second, "b", 0, None, position(1, 1))
    t.recorded(third, "a", 1, None, position(1, 2))
    assert t.safe_position is None  # the first add is still out
    t.recorded(first, "a", 0, None, position(1, 0))
    assert t.safe_position == position(1, 2)
    assert t.snapshot_due(3)
    pos, persisted = t.snapshot()
    assert pos == position(1, 2)
    assert persisted == {"a": 1, "b": 0}
    t.snapshot_taken(pos)
    assert not t.snapshot_due(1)


def test_restore_and_replay_rebuild_the_map() -> None:
    t = SequenceTracker(persisted={"a": 4})
    assert t.check("a", 4, None) is DupStatus.DUP
    t.replayed("a", 5, 6, position(2, 0))
    t.replayed("b", 0, None, position(2, 1))
    assert t.last_sequence_id("a") == 6
    assert t.last_sequence_id("b") == 0
    assert t.check("a", 6, None) is DupStatus.DUP
    assert t.safe_position == position(2, 1)


def test_bounded_number_of_producers_forgets_the_longest_idle() -> None:
    t = SequenceTracker(max_producers=2)
    for i, name in enumerate(["a", "b"]):
        t.producer_added(name)
        t.recorded(_push(t, name, 0), name, 0, None, position(1, i))
    t.producer_removed("b", now=1.0)
    t.producer_removed("a", now=2.0)
    t.recorded(_push(t, "c", 0), "c", 0, None, position(1, 2))
    assert set(t.persisted) == {"a", "c"}


def test_inactive_producers_are_purged() -> None:
    t = SequenceTracker()
    t.producer_added("a")
    t.recorded(_push(t, "a", 0), "a", 0, None, position(1, 0))
    t.producer_removed("a", now=10.0)
    assert t.purge_inactive(now=15.0, timeout_s=10.0) == []
    assert t.purge_inactive(now=20.0, timeout_s=10.0) == ["a"]
    assert t.last_sequence_id("a") == -1


def _push_chunk(t: SequenceTracker, name: str, seq: int, chunk: tuple[int, int]) -> int:
    assert t.check(name, seq, None, chunk) is DupStatus.NOT_DUP
    return t.dispatched()


def test_every_chunk_of_a_message_is_stored_once() -> None:
    """The chunks share the message's sequence id: (sequence id, chunk id) identifies them."""
    t = SequenceTracker()
    for c in range(3):
        t.recorded(_push_chunk(t, "p", 0, (c, 3)), "p", 0, None, position(1, c), (c, 3))
    assert t.last_sequence_id("p") == 0
    for c in range(3):  # the whole message resent: every chunk is a duplicate
        assert t.check("p", 0, None, (c, 3)) is DupStatus.DUP
    assert t.check("p", 1, None, (0, 2)) is DupStatus.NOT_DUP


def test_a_message_resent_after_a_reconnect_mid_message_stores_only_the_missing_chunks() -> None:
    t = SequenceTracker()
    for c in range(2):
        t.recorded(_push_chunk(t, "p", 4, (c, 4)), "p", 4, None, position(1, c), (c, 4))
    ticket = _push_chunk(t, "p", 4, (2, 4))  # in flight when the producer goes away
    t.producer_removed("p", 0.0)
    t.recorded(ticket, "p", 4, None, None, (2, 4))  # ... and it failed
    t.producer_added("p")
    assert t.last_sequence_id("p") == -1  # the message is not complete: it is resent
    assert t.check("p", 4, None, (0, 4)) is DupStatus.DUP
    assert t.check("p", 4, None, (1, 4)) is DupStatus.DUP
    assert t.check("p", 4, None, (2, 4)) is DupStatus.NOT_DUP
    assert t.check("p", 4, None, (2, 4)) is DupStatus.UNKNOWN  # while that one is in flight


def test_the_unfinished_chunk_state_survives_a_snapshot() -> None:
    t = SequenceTracker()
    t.recorded(_push(t, "p", 0), "p", 0, None, position(1, 0))
    t.recorded(_push_chunk(t, "p", 1, (0, 3)), "p", 1, None, position(1, 1), (0, 3))
    _, stored = t.snapshot()
    reloaded = SequenceTracker(persisted=stored)
    assert reloaded.persisted == {"p": 0}
    assert reloaded.check("p", 1, None, (0, 3)) is DupStatus.DUP
    assert reloaded.check("p", 1, None, (1, 3)) is DupStatus.NOT_DUP


def test_a_replicated_send_whose_producer_name_is_not_utf8_has_no_origin() -> None:
    """protobuf hands a string field that is not UTF-8 over as bytes: such a replicated SEND
    is deduplicated by the replicator's own ids, not keyed by a name that is not a str."""
    metadata = pb.MessageMetadata()
    metadata.MergeFromString(field(1, b"\xff") + field(2, 7) + field(3, 5))
    assert _origin(metadata) is None
    assert _origin(pb.MessageMetadata(producer_name="a", sequence_id=3, publish_time=1)) == (
        "a",
        3,
        3,
    )
