"""The delayed-delivery index against a plain model: nothing comes out before its time, nothing
is lost or duplicated, everything comes out at most one tick late (taken without a limit), in
position order, with its sticky hash; ``next_due_time`` is the earliest moment something
falls due."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from magnetar.broker.dispatch import DelayedDeliveryIndex
from magnetar.managed_ledger import Position

positions = st.builds(Position, st.integers(0, 2**40), st.integers(0, 2**40))
slots = st.none() | st.integers(0, 65535)


class DelayedIndexMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.index = DelayedDeliveryIndex()
        self.model: dict[Position, tuple[int, int | None]] = {}
        self.now = 0

    @initialize(tick=st.integers(1, 5000))
    def start(self, tick: int) -> None:
        self.index = DelayedDeliveryIndex(tick_ms=tick, limit=50)

    @rule(pos=positions, delay=st.integers(-2000, 20_000), slot=slots)
    def add(self, pos: Position, delay: int, slot: int | None) -> None:
        if pos in self.model:  # the caller adds a position once per read
            return
        self.index.add(pos, self.now + delay, slot)
        self.model[pos] = (self.now + delay, slot)

    @rule(step=st.integers(0, 6000), limit=st.none() | st.integers(1, 5))
    def advance(self, step: int, limit: int | None) -> None:
        self.now += step
        out = self.index.due(self.now, limit)
        got = [p for p, _ in out]
        assert got == sorted(got)
        for pos, slot in out:
            deliver_at, want_slot = self.model.pop(pos)  # KeyError: never added, or twice
            assert deliver_at <= self.now, "released before its time"
            assert slot == want_slot
        if limit is not None:
            assert len(out) <= limit
            if len(out) == limit:
                return  # the rest may still be due: the next call takes it
        for deliver_at, _ in self.model.values():
            assert deliver_at > self.now - self.index.tick_ms, "kept over a tick past its time"

    @rule()
    def clear(self) -> None:
        self.index.clear()
        self.model.clear()

    @invariant()
    def agrees(self) -> None:
        last = self.index.last_position  # an upper bound of what is held
        assert (last is None) == (not self.model)
        assert last is None or last >= max(self.model)
        assert len(self.index) == len(self.model)
        assert bool(self.index) == bool(self.model)
        assert self.index.full == (len(self.model) >= self.index.limit)
        due = self.index.next_due_time()
        if not self.model:
            assert due is None
        else:
            assert due is not None
            earliest = min(d for d, _ in self.model.values())
            assert earliest <= due < earliest + self.index.tick_ms


TestDelayedIndex = DelayedIndexMachine.TestCase
TestDelayedIndex.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)


@given(st.lists(st.tuples(positions, st.integers(0, 10**13), slots), unique_by=lambda t: t[0]))
def test_drain_returns_everything_once(items: list[tuple[Position, int, int | None]]) -> None:
    index = DelayedDeliveryIndex(tick_ms=1000)
    for pos, at, slot in items:
        index.add(pos, at, slot)
    out = index.drain()
    assert out == sorted((pos, slot) for pos, _, slot in items)
    assert not index
    assert index.next_due_time() is None
