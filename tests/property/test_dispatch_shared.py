"""Shared/Exclusive plans: permits are respected (with the batch allowance), no entry is lost or
duplicated, and each consumer's entries keep the log order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from magnetar.broker.dispatch import Candidate, ConsumerSlot, SubType, plan_dispatch
from magnetar.managed_ledger import Position

consumers_st = st.lists(
    st.tuples(st.integers(-5, 30), st.integers(0, 2)), min_size=0, max_size=6
).map(lambda specs: [ConsumerSlot((1, i), p, lvl) for i, (p, lvl) in enumerate(specs)])
entries_st = st.lists(st.integers(1, 10), max_size=40).map(
    lambda counts: [Candidate(Position(1, i), n) for i, n in enumerate(counts)]
)


def check_plan_conserves_and_respects_permits(
    consumers: list[ConsumerSlot], entries: list[Candidate], sub_type: SubType
) -> None:
    plan = plan_dispatch(sub_type, consumers, entries)
    handed = [c for _, got in plan.assignments for c in got]
    assert sorted(handed + list(plan.leftovers), key=lambda c: c.position) == entries
    assert len({c.position for c in handed}) == len(handed)
    permits = {c.key: c.permits for c in consumers}
    for key, got in plan.assignments:
        assert list(got) == sorted(got, key=lambda c: c.position)
        remaining = permits[key]
        for c in got:
            assert remaining > 0, "an entry went to a consumer without permits"
            remaining -= c.message_count
        total = sum(c.message_count for c in got)
        assert total <= permits[key] - 1 + max(c.message_count for c in got)
        permits[key] = remaining
    if plan.leftovers and sub_type == SubType.SHARED:
        # Entries were left only because nobody had permits left.
        assert all(p <= 0 for p in permits.values())


@given(consumers_st, entries_st)
def test_shared_plan(consumers: list[ConsumerSlot], entries: list[Candidate]) -> None:
    check_plan_conserves_and_respects_permits(consumers, entries, SubType.SHARED)


@given(consumers_st, entries_st)
def test_shared_plan_serves_best_priority_level_first(
    consumers: list[ConsumerSlot], entries: list[Candidate]
) -> None:
    plan = plan_dispatch(SubType.SHARED, consumers, entries)
    level = {c.key: c.priority_level for c in consumers}
    permits = {c.key: c.permits for c in consumers}
    order = [(key, c) for key, got in plan.assignments for c in got]
    order.sort(key=lambda kc: kc[1].position)
    for key, c in order:
        better = [k for k in permits if level[k] < level[key] and permits[k] > 0]
        assert not better, "a lower priority consumer was served while a better one had permits"
        permits[key] -= c.message_count


@given(consumers_st.filter(bool), entries_st)
def test_exclusive_plan(consumers: list[ConsumerSlot], entries: list[Candidate]) -> None:
    check_plan_conserves_and_respects_permits(consumers[:1], entries, SubType.EXCLUSIVE)
    plan = plan_dispatch(SubType.EXCLUSIVE, consumers[:1], entries)
    # A prefix goes out, the rest is left over, in order.
    assert [c for _, got in plan.assignments for c in got] + list(plan.leftovers) == entries
