"""A run of confirmed entries inserted at once leaves the caches as inserting them one by one.

:meth:`EntryCache.insert_run` charges the budget and evicts once for the run. For what the
managed ledger hands it (newly confirmed entries, after every entry that cache holds) and
whatever the budget, the pins, oversized entries and the other cache sharing the budget, the
caches must end up holding the same entries in the same order with the same byte counts as
:meth:`EntryCache.insert` called per entry.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from magnetar.ids import EntryId, LedgerId
from magnetar.managed_ledger.entry_cache import CacheBudget, Entry, EntryCache
from magnetar.managed_ledger.position import Position

# cache, entry ids skipped before the run (a ledger's entries not cached), sizes, pinned from
Step = tuple[int, int, list[int], int | None]


def _state(budget: CacheBudget, caches: list[EntryCache]) -> object:
    return (
        budget.used_bytes,
        [(c.bytes, list(c._entries), [v[0] for v in c._entries.values()]) for c in caches],
    )


def _play(steps: list[Step], max_bytes: int, runs: bool) -> object:
    budget = CacheBudget(max_bytes)
    caches = [budget.cache(), budget.cache()]
    next_id = [0, 0]
    for which, gap, sizes, pinned in steps:
        cache = caches[which]
        first = next_id[which] + gap
        next_id[which] = first + len(sizes)
        cache.pinned_from = None if pinned is None else Position(LedgerId(which), EntryId(pinned))
        positions = [Position(LedgerId(which), EntryId(first + i)) for i in range(len(sizes))]
        datas = [bytes([i % 256]) * size for i, size in enumerate(sizes)]
        if runs:
            cache.insert_run(positions, datas)
        else:
            for pos, data in zip(positions, datas, strict=True):
                cache.insert(Entry(pos, data))
    return _state(budget, caches)


_STEPS = st.lists(
    st.tuples(
        st.integers(0, 1),
        st.integers(0, 3),
        st.lists(st.integers(0, 40), max_size=6),
        st.none() | st.integers(0, 30),
    ),
    max_size=8,
)


@settings(max_examples=400, deadline=None)
@given(_STEPS, st.integers(0, 120))
def test_a_run_inserted_at_once_leaves_what_one_by_one_leaves(
    steps: list[Step], max_bytes: int
) -> None:
    assert _play(steps, max_bytes, runs=True) == _play(steps, max_bytes, runs=False)


# A step of the managed ledger: a new ledger first (or not), entry ids skipped, the run's sizes,
# how far the pin moves on (entries, at most to the run's first), whether a cursor exists (the
# run is inserted, not held), and whether a read follows.
Held = tuple[bool, int, list[int], int, bool, bool]


def _play_held(steps: list[Held], max_bytes: int, hold: bool) -> object:
    """The managed ledger's two paths for runs no cursor reads: insert_run then evict_before
    of the pin (``hold`` False), or hold_run (True); a read caches what is held."""
    budget = CacheBudget(max_bytes)
    cache = budget.cache()
    ledger, next_id, pin = 0, 0, 0
    for new_ledger, gap, sizes, advance, cursor, read in steps:
        if new_ledger:
            ledger, next_id, pin = ledger + 1, 0, 0
        first = next_id + gap
        next_id = first + len(sizes)
        pin = min(pin + advance, first)
        cache.pinned_from = Position(LedgerId(ledger), EntryId(pin))
        positions = [Position(LedgerId(ledger), EntryId(first + i)) for i in range(len(sizes))]
        datas = [bytes([i % 256]) * size for i, size in enumerate(sizes)]
        if cursor:
            cache.insert_run(positions, datas)
        elif hold:
            cache.hold_run(positions, datas)
        else:
            cache.insert_run(positions, datas)
            cache.evict_before(cache.pinned_from)
        if read:
            cache.get_run([])
    cache.get_run([])
    return _state(budget, [cache])


_HELD_STEPS = st.lists(
    st.tuples(
        st.booleans(),
        st.integers(0, 2),
        st.lists(st.integers(0, 40), max_size=6),
        st.integers(0, 8),
        st.booleans(),
        st.booleans(),
    ),
    max_size=10,
)


@settings(max_examples=400, deadline=None)
@given(_HELD_STEPS, st.integers(0, 120))
def test_runs_held_aside_are_cached_as_inserting_and_evicting_them_would(
    steps: list[Held], max_bytes: int
) -> None:
    assert _play_held(steps, max_bytes, hold=True) == _play_held(steps, max_bytes, hold=False)
