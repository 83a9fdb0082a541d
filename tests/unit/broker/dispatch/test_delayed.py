"""The delayed-delivery index: buckets fall due at the end of their tick, bounds, bad input."""

from __future__ import annotations

import pytest

from magnetar.broker.dispatch import DelayedDeliveryIndex
from magnetar.managed_ledger import Position


def test_an_entry_falls_due_at_the_end_of_its_tick_never_before_its_time() -> None:
    index = DelayedDeliveryIndex(tick_ms=1000)
    index.add(Position(3, 7), 10_001, 42)
    assert index.next_due_time() == 11_000
    assert index.due(10_001) == []  # its time, but its tick has not ended
    assert index.due(10_999) == []
    assert index.due(11_000) == [(Position(3, 7), 42)]
    assert len(index) == 0
    assert index.next_due_time() is None


def test_entries_come_out_in_position_order_across_buckets() -> None:
    index = DelayedDeliveryIndex(tick_ms=10)
    index.add(Position(2, 0), 55)
    index.add(Position(1, 5), 15)
    index.add(Position(1, 9), 55)
    index.add(Position(1, 1), 99)
    assert index.due(60) == [(Position(1, 5), None), (Position(1, 9), None), (Position(2, 0), None)]
    assert index.next_due_time() == 100


def test_full_at_the_limit_and_clear_forgets_everything() -> None:
    index = DelayedDeliveryIndex(tick_ms=1, limit=3)
    for i in range(3):
        assert not index.full
        index.add(Position(1, i), 1000 + i)
    assert index.full
    assert len(index) == 3
    index.clear()
    assert not index
    assert not index.full
    assert index.due(10**12) == []


@pytest.mark.parametrize(("tick", "limit"), [(0, 10), (-1, 10), (1000, 0)])
def test_bad_settings_are_refused(tick: int, limit: int) -> None:
    with pytest.raises(ValueError, match="must be at least 1"):
        DelayedDeliveryIndex(tick_ms=tick, limit=limit)


def test_due_with_a_limit_leaves_the_rest_for_the_next_call() -> None:
    index = DelayedDeliveryIndex(tick_ms=1000)
    for i in range(5):
        index.add(Position(1, i), 500)
    index.add(Position(2, 0), 1500)
    assert index.due(5000, 3) == [(Position(1, i), None) for i in range(3)]
    assert len(index) == 3
    assert index.next_due_time() == 1000
    assert index.due(5000, 3) == [
        (Position(1, 3), None),
        (Position(1, 4), None),
        (Position(2, 0), None),
    ]
    assert not index
