"""Exclusive, Failover and Shared membership rules; permits."""

from __future__ import annotations

import pytest

from magnetar.broker.dispatch import (
    ActiveConsumerChange,
    ConsumerBusy,
    ConsumerInfo,
    ExclusiveSelector,
    FailoverSelector,
    Permits,
    SharedSelector,
    SubType,
    check_sub_type,
)
from magnetar.protocol.errors import server_error_for
from magnetar.wire import pulsar_api_pb2 as pb


def consumer(cid: int, name: str = "", priority: int = 0, cnx: int = 1) -> ConsumerInfo:
    return ConsumerInfo(cid, name or f"c{cid}", priority_level=priority, connection_id=cnx)


def test_exclusive_second_consumer_is_busy() -> None:
    sel = ExclusiveSelector()
    sel.add(consumer(1))
    with pytest.raises(ConsumerBusy, match="Exclusive consumer is already connected") as err:
        sel.add(consumer(2))
    assert server_error_for(err.value) == pb.ConsumerBusy
    assert sel.active == (1, 1)
    assert not sel.remove((1, 2))
    assert sel.remove((1, 1))
    sel.add(consumer(2))
    assert sel.active == (1, 2)


def test_subscription_keeps_its_type() -> None:
    check_sub_type(None, SubType.SHARED)
    check_sub_type(SubType.SHARED, SubType.SHARED)
    with pytest.raises(ConsumerBusy, match="different type"):
        check_sub_type(SubType.SHARED, SubType.EXCLUSIVE)


def test_failover_active_is_best_priority_then_name() -> None:
    sel = FailoverSelector()
    first = sel.add(consumer(1, "b"))
    assert first.active == (1, 1)
    assert first.events == (ActiveConsumerChange((1, 1), True),)

    # "a" sorts before "b": the active consumer changes and everyone is told.
    change = sel.add(consumer(2, "a"))
    assert change.changed
    assert change.previous_active == (1, 1)
    assert change.active == (1, 2)
    assert set(change.events) == {
        ActiveConsumerChange((1, 2), True),
        ActiveConsumerChange((1, 1), False),
    }

    # "c" does not change the active one: only the newcomer hears (inactive).
    change = sel.add(consumer(3, "c"))
    assert not change.changed
    assert change.events == (ActiveConsumerChange((1, 3), False),)

    # A better priority level (lower number) wins over names.
    change = sel.add(consumer(4, "z", priority=-1))
    assert change.active == (1, 4)
    assert len(change.events) == 4

    # The active one leaves: the next in order takes over, all remaining consumers hear.
    change = sel.remove((1, 4))
    assert change.previous_active == (1, 4)
    assert change.active == (1, 2)
    assert {e.consumer for e in change.events} == {(1, 1), (1, 2), (1, 3)}
    # A standby leaves: nothing to tell.
    assert sel.remove((1, 3)).events == ()
    assert sel.remove((1, 2)).active == (1, 1)
    assert sel.remove((1, 1)).active is None


def test_failover_partitioned_picks_partition_index_mod_candidates() -> None:
    for partition in range(5):
        sel = FailoverSelector(partition_index=partition)
        for cid, name in [(1, "c"), (2, "a"), (3, "b")]:
            sel.add(consumer(cid, name))
        sel.add(consumer(9, "low-priority", priority=5))  # never a candidate
        names = {(1, 1): "c", (1, 2): "a", (1, 3): "b"}
        assert sel.active is not None
        assert names[sel.active] == ["a", "b", "c"][partition % 3]


def test_failover_same_key_twice_is_refused() -> None:
    sel = FailoverSelector()
    sel.add(consumer(1))
    with pytest.raises(ConsumerBusy):
        sel.add(consumer(1))


def test_shared_rotation_starts_after_last_served() -> None:
    sel = SharedSelector()
    for cid in (1, 2, 3):
        sel.add(consumer(cid))
    assert [c.consumer_id for c in sel.rotation()] == [1, 2, 3]
    sel.served((1, 2))
    assert [c.consumer_id for c in sel.rotation()] == [3, 1, 2]
    sel.remove((1, 3))
    assert [c.consumer_id for c in sel.rotation()] == [1, 2]
    sel.served((1, 1))
    sel.remove((1, 1))
    assert [c.consumer_id for c in sel.rotation()] == [2]


def test_permits_count_messages_and_a_batch_may_overdraw() -> None:
    p = Permits()
    assert not p.can_dispatch
    p.flow(3)
    assert p.can_dispatch
    p.consume(10)  # a batch of 10 with 3 permits: allowed, goes negative
    assert p.available == -7
    assert not p.can_dispatch
    p.flow(7)
    assert not p.can_dispatch  # exactly 0: still nothing
    p.flow(1)
    assert p.can_dispatch
    p.restore(2)
    assert p.available == 3
    with pytest.raises(ValueError):
        p.flow(-1)
    p.reset()
    assert p.available == 0
