"""The range set of individually acknowledged positions, against a set-of-ints model.

Positions encode ints: ledger ``1 + i // 10``, entry ``i % 10`` (ten entries per ledger), so the
model crosses ledger boundaries where the range set must not merge.
"""

from __future__ import annotations

import itertools

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from magnetar.managed_ledger.position import Position, position
from magnetar.managed_ledger.range_set import RangeSet

PER_LEDGER = 10
UNIVERSE = 60


def pos_of(i: int) -> Position:
    return position(1 + i // PER_LEDGER, i % PER_LEDGER)


def int_of(p: Position) -> int:
    return (p.ledger_id - 1) * PER_LEDGER + p.entry_id


ints = st.integers(0, UNIVERSE - 1)


class RangeSetMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.rs = RangeSet()
        self.model: set[int] = set()

    @rule(i=ints)
    def add(self, i: int) -> None:
        self.rs.add(pos_of(i))
        self.model.add(i)

    @rule(
        ledger=st.integers(0, UNIVERSE // PER_LEDGER - 1),
        a=st.integers(-1, 9),
        n=st.integers(0, 10),
    )
    def add_range(self, ledger: int, a: int, n: int) -> None:
        b = min(a + n, PER_LEDGER - 1)
        self.rs.add_range(position(1 + ledger, a), position(1 + ledger, b))
        self.model.update(ledger * PER_LEDGER + e for e in range(a + 1, b + 1))

    @rule(i=ints)
    def discard(self, i: int) -> None:
        self.rs.discard(pos_of(i))
        self.model.discard(i)

    @rule(i=st.integers(-1, UNIVERSE - 1), before_ledger=st.booleans())
    def remove_up_to(self, i: int, before_ledger: bool) -> None:
        mark = pos_of(max(i, 0))
        if before_ledger:
            # (ledger, -1): everything of earlier ledgers, nothing of this one.
            mark = position(mark.ledger_id, -1)
            limit = (mark.ledger_id - 1) * PER_LEDGER - 1
        else:
            limit = max(i, 0)  # the mark is pos_of(max(i, 0)): i = -1 removes entry 0 too
        self.rs.remove_up_to(mark)
        self.model = {x for x in self.model if x > limit}

    @rule(a=st.integers(-1, UNIVERSE - 1), b=st.integers(-1, UNIVERSE - 1))
    def count_between(self, a: int, b: int) -> None:
        pa, pb = pos_of(max(a, 0)), pos_of(max(b, 0))
        expected = len([x for x in self.model if max(a, 0) < x <= max(b, 0)])
        assert self.rs.count_between(pa, pb) == expected

    @invariant()
    def same_members(self) -> None:
        assert [int_of(p) for p in self.rs.positions()] == sorted(self.model)
        assert self.rs.count() == len(self.model)
        for i in range(UNIVERSE):
            assert (pos_of(i) in self.rs) == (i in self.model)

    @invariant()
    def ranges_sorted_disjoint_one_ledger(self) -> None:
        ranges = list(self.rs.ranges())
        for lower, upper in ranges:
            assert lower.ledger_id == upper.ledger_id
            assert lower < upper
        for (_, up1), (lo2, _) in itertools.pairwise(ranges):
            assert up1 < lo2  # disjoint and not touching: touching ranges must have merged

    @invariant()
    def minimal_ranges(self) -> None:
        # The number of ranges equals the number of maximal runs of the model within a ledger.
        runs = sum(1 for x in self.model if x - 1 not in self.model or x % PER_LEDGER == 0)
        assert len(self.rs) == runs


TestRangeSet = RangeSetMachine.TestCase


def test_copy_is_independent() -> None:
    rs = RangeSet([(position(1, -1), position(1, 3))])
    other = rs.copy()
    other.add(position(1, 5))
    assert position(1, 5) not in rs
    assert rs != other
    assert rs == RangeSet([(position(1, 0), position(1, 3)), (position(1, -1), position(1, 0))])


def test_range_spanning_ledgers_rejected() -> None:
    import pytest

    with pytest.raises(ValueError, match="spans ledgers"):
        RangeSet().add_range(position(1, 3), position(2, 1))
