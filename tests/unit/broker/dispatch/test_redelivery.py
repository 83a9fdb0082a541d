"""Replay queue, redelivery counts, negative-ack schedule, ack timeouts, dead-letter hook."""

from __future__ import annotations

import pytest

from magnetar.broker.dispatch import (
    AckTimeoutTracker,
    NegativeAckSchedule,
    RedeliveryCounts,
    RedeliveryQueue,
    dead_letter_due,
)
from magnetar.managed_ledger import Position


def p(e: int) -> Position:
    return Position(1, e)


def test_queue_is_sorted_and_tracks_slots() -> None:
    q = RedeliveryQueue()
    q.add(p(5), 9)
    q.add(p(2), 9)
    q.add(p(3), None)
    q.add(p(2), 9)  # once only
    assert q.positions() == [p(2), p(3), p(5)]
    assert len(q) == 3
    assert q.positions(limit=1) == [p(2)]
    assert q.hashes() == {9}
    assert q.remove(p(2))
    assert not q.remove(p(2))
    assert q.hashes() == {9}
    assert q.remove_up_to(p(5)) == [p(3), p(5)]
    assert q.hashes() == frozenset()
    assert len(q) == 0


def test_queue_asks_accept_once_per_refused_slot() -> None:
    # Key_Shared parks a consumer's entries here while it has no permits; a step must not pay
    # a call of ``accept`` for each of them (the filter refuses whole slots, oldest first).
    q = RedeliveryQueue()
    for e in range(1000):
        q.add(p(e), 7)  # parked: slot 7 is refused
    q.add(p(1000), None)
    q.add(p(1001), 8)
    q.add(p(1002), 8)
    asked: list[tuple[Position, int | None]] = []

    def accept(position: Position, slot: int | None) -> bool:
        asked.append((position, slot))
        return slot != 7

    assert q.positions(10, accept) == [p(1000), p(1001), p(1002)]
    assert asked == [(p(0), 7), (p(1000), None), (p(1001), 8), (p(1002), 8)]
    assert q.positions(2, accept) == [p(1000), p(1001)]


def test_redelivery_counts_and_dead_letter_decision() -> None:
    counts = RedeliveryCounts()
    assert counts.count(p(1)) == 0
    assert counts.increment(p(1)) == 1
    assert counts.increment(p(1)) == 2
    counts.increment(p(4))
    counts.forget_up_to(p(2))
    assert counts.count(p(1)) == 0
    assert counts.count(p(4)) == 1
    counts.forget([p(4)])
    assert len(counts) == 0
    assert not dead_letter_due(2, 3)
    assert dead_letter_due(3, 3)
    assert not dead_letter_due(100, 0)  # disabled


def test_negative_ack_schedule_releases_positions_when_due() -> None:
    s = NegativeAckSchedule()
    assert s.next_due() is None
    s.add([p(3), p(1)], due=10.0)
    s.add([p(2)], due=5.0)
    assert s.next_due() == 5.0
    assert s.pop_due(4.9) == []
    assert s.pop_due(5.0) == [p(2)]
    s.add([p(1)], due=20.0)  # nacked again: the later due time wins
    s.remove(p(3))  # acked meanwhile
    assert s.next_due() == 20.0
    assert s.pop_due(15.0) == []
    assert s.pop_due(20.0) == [p(1)]
    assert len(s) == 0


def test_ack_timeout_tracker() -> None:
    t = AckTimeoutTracker(timeout=30.0)
    t.sent(p(1), now=0.0)
    t.sent(p(2), now=10.0)
    t.acked(p(2))
    t.sent(p(3), now=20.0)
    assert t.expired(29.0) == []
    assert t.expired(50.0) == [p(1), p(3)]
    assert len(t) == 0
    with pytest.raises(ValueError):
        AckTimeoutTracker(0)


def test_negative_ack_schedule_stays_bounded_under_repeated_nacks() -> None:
    s = NegativeAckSchedule()
    for t in range(10_000):
        s.add([p(t % 3)], due=float(t))
    assert len(s) == 3
    assert len(s._heap) <= 2 * 3 + 64 + 1
    assert s.pop_due(1e9) == [p(0), p(1), p(2)]
