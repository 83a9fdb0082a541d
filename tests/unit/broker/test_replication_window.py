"""The replicator's pure core: the filter, the replicated metadata and the in-flight window."""

from __future__ import annotations

import pytest

from magnetar.broker.replication.names import (
    cluster_of,
    cursor_name,
    is_replicator,
    producer_name,
)
from magnetar.broker.replication.topic_replicators import remote_clusters
from magnetar.broker.replication.window import (
    ReplicationWindow,
    replicated_metadata,
    should_replicate,
)
from magnetar.ids import EntryId, LedgerId
from magnetar.managed_ledger import Position
from magnetar.wire import pulsar_api_pb2 as pb


def pos(entry: int, ledger: int = 1) -> Position:
    return Position(LedgerId(ledger), EntryId(entry))


def test_names_follow_pulsar() -> None:
    assert cursor_name("us-east") == "pulsar.repl.us-east"
    assert producer_name("eu") == "pulsar.repl.eu"
    assert is_replicator("pulsar.repl.eu")
    assert not is_replicator("pulsar.dedup")
    assert cluster_of(cursor_name("b")) == "b"


def test_remote_clusters_only_when_the_policy_includes_the_local_cluster() -> None:
    assert remote_clusters("a", frozenset({"a", "b", "c"})) == {"b", "c"}
    assert remote_clusters("a", frozenset({"b", "c"})) == frozenset()
    assert remote_clusters("a", frozenset({"a"})) == frozenset()
    assert remote_clusters("a", frozenset()) == frozenset()


def test_a_replicated_entry_is_never_replicated_again() -> None:
    md = pb.MessageMetadata(producer_name="p", sequence_id=1, publish_time=5)
    assert should_replicate(md, "b")
    md.replicated_from = "c"
    assert not should_replicate(md, "b")


def test_replicate_to_limits_the_remotes() -> None:
    md = pb.MessageMetadata(producer_name="p", sequence_id=1, publish_time=5)
    md.replicate_to.extend(["b"])
    assert should_replicate(md, "b")
    assert not should_replicate(md, "c")


def test_replicated_metadata_keeps_the_origin_and_adds_replicated_from() -> None:
    md = pb.MessageMetadata(
        producer_name="p", sequence_id=7, publish_time=5, event_time=3, partition_key="k",
        num_messages_in_batch=4, ordering_key=b"o",
    )  # fmt: skip
    md.properties.add(key="a", value="1")
    copy = replicated_metadata(md, "a")
    assert copy.replicated_from == "a"
    assert not md.HasField("replicated_from")  # the stored entry's metadata is not touched
    copy.ClearField("replicated_from")
    assert copy == md


def test_mark_delete_moves_only_over_a_settled_prefix() -> None:
    w = ReplicationWindow(max_entries=10, max_bytes=1000)
    for e in range(3):
        w.sent(pos(e), 10, publish_time_ms=100 + e)
    w.acknowledged(pos(1))
    assert w.take_mark_delete() is None  # entry 0 is still in flight
    assert w.oldest_publish_time_ms == 100
    w.acknowledged(pos(0))
    assert w.take_mark_delete() == pos(1)
    assert w.take_mark_delete() is None  # taken once
    assert w.oldest_publish_time_ms == 102
    w.acknowledged(pos(2))
    assert w.take_mark_delete() == pos(2)
    assert len(w) == 0
    assert w.in_flight_bytes == 0


def test_skipped_entries_settle_in_their_place() -> None:
    w = ReplicationWindow(max_entries=10, max_bytes=1000)
    w.sent(pos(0), 10, 1)
    w.skipped(pos(1))
    assert w.take_mark_delete() is None
    w.acknowledged(pos(0))
    assert w.take_mark_delete() == pos(1)
    w.skipped(pos(2))
    assert w.take_mark_delete() == pos(2)


def test_room_is_bounded_by_count_and_bytes() -> None:
    w = ReplicationWindow(max_entries=3, max_bytes=25)
    assert w.room == 3
    w.sent(pos(0), 10, 1)
    w.sent(pos(1), 10, 1)
    assert w.room == 1
    w.sent(pos(2), 10, 1)
    assert w.room == 0  # 30 bytes >= 25 and 3 entries
    w.acknowledged(pos(0))
    assert w.room == 1
    assert w.in_flight_bytes == 20


def test_unknown_and_repeated_receipts_are_ignored() -> None:
    w = ReplicationWindow(max_entries=3, max_bytes=100)
    w.sent(pos(0), 10, 1)
    w.acknowledged(pos(5))
    w.acknowledged(pos(0))
    w.acknowledged(pos(0))
    assert w.in_flight_bytes == 0
    assert w.take_mark_delete() == pos(0)


def test_an_entry_cannot_be_in_flight_twice() -> None:
    w = ReplicationWindow(max_entries=3, max_bytes=100)
    w.sent(pos(0), 10, 1)
    with pytest.raises(ValueError, match="already in flight"):
        w.sent(pos(0), 10, 1)


def test_a_window_needs_room() -> None:
    with pytest.raises(ValueError, match="room"):
        ReplicationWindow(0, 10)
