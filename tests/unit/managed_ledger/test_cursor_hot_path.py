"""The shortcuts of the dispatch/ack hot path in the cursor state, range set and entry cache.

In-order individual acks move the mark-delete directly, an ack right after the last range
extends it, a cache read takes a whole run, eviction charges a whole run at once: each must
leave exactly the state the general path leaves.
"""

from __future__ import annotations

import gc

import pytest

from magnetar.managed_ledger.cursor_state import CursorState
from magnetar.managed_ledger.entry_cache import CacheBudget, Entry
from magnetar.managed_ledger.errors import InvalidPosition
from magnetar.managed_ledger.layout import LedgerLayout
from magnetar.managed_ledger.position import position
from magnetar.managed_ledger.range_set import RangeSet


def test_in_order_acks_move_the_mark_delete_without_ranges() -> None:
    layout = LedgerLayout([(1, 10)])
    state = CursorState(position(1, -1))
    state.batch_deleted[position(1, 1)] = 0b10
    assert state.deleted([position(1, e) for e in range(4)], layout)
    assert state.mark_delete == position(1, 3)
    assert not state.individually_deleted
    assert state.batch_deleted == {}
    assert state.read_position == position(1, 4)
    assert not state.deleted([position(1, 2)], layout)  # already covered: no change


def test_in_order_acks_after_a_gap_then_the_gap_filled() -> None:
    layout = LedgerLayout([(1, 10)])
    state = CursorState(position(1, -1))
    state.deleted([position(1, 0), position(1, 2), position(1, 3), position(1, 4)], layout)
    assert state.mark_delete == position(1, 0)
    assert list(state.individually_deleted.ranges()) == [(position(1, 1), position(1, 4))]
    state.deleted([position(1, 1)], layout)
    assert state.mark_delete == position(1, 4)
    assert not state.individually_deleted


def test_in_order_ack_across_a_ledger_boundary_uses_the_layout() -> None:
    layout = LedgerLayout([(1, 2), (2, 0), (3, 2)])
    state = CursorState(position(1, -1))
    state.deleted([position(1, 0), position(1, 1), position(3, 0), position(3, 1)], layout)
    assert state.mark_delete == position(3, 1)
    assert not state.individually_deleted


def test_in_order_ack_of_a_missing_entry_is_refused() -> None:
    layout = LedgerLayout([(1, 2)])
    state = CursorState(position(1, 1))
    with pytest.raises(InvalidPosition):
        state.deleted([position(1, 2)], layout)
    assert state.mark_delete == position(1, 1)


def test_range_set_add_extends_the_last_range_only_when_adjacent() -> None:
    ranges = RangeSet()
    for e in (3, 4, 5, 9, 10, 7):
        ranges.add(position(1, e))
    ranges.add(position(2, 0))  # another ledger: a range of its own
    assert list(ranges.ranges()) == [
        (position(1, 2), position(1, 5)),
        (position(1, 6), position(1, 7)),
        (position(1, 8), position(1, 10)),
        (position(2, -1), position(2, 0)),
    ]


def test_cache_get_run_stops_at_the_first_miss() -> None:
    cache = CacheBudget(max_bytes=1000).cache()
    for e in (0, 1, 2, 4):
        cache.insert(Entry(position(1, e), b"x"))
    wanted = [position(1, e) for e in range(5)]
    assert [x.position for x in cache.get_run(wanted)] == wanted[:3]
    assert cache.get_run(wanted, 3) == []
    assert cache.get_run(wanted, 4) == [Entry(position(1, 4), b"x")]
    assert cache.get(position(1, 1)) == cache.get_run(wanted, 1)[0] == Entry(position(1, 1), b"x")


def test_evict_before_keeps_pinned_entries_and_accounts_bytes() -> None:
    budget = CacheBudget(max_bytes=1000)
    cache = budget.cache()
    for e in range(6):
        cache.insert(Entry(position(1, e), b"y" * 10))
    cache.pinned_from = position(1, 2)
    assert cache.evict_before(position(1, 5)) == 2  # 1:2 on are pinned
    assert budget.used_bytes == cache.bytes == 40
    assert cache.oldest_seq == cache._entries[position(1, 2)][1]
    cache.pinned_from = None
    assert cache.evict_before(position(1, 5)) == 3
    assert [e for e in range(6) if position(1, e) in cache] == [5]
    assert budget.used_bytes == 10
    assert cache.evict_before(position(1, 5)) == 0


def test_cached_entries_leave_the_cyclic_gc_after_one_pass() -> None:
    cache = CacheBudget(max_bytes=1000).cache()
    cache.insert(Entry(position(1, 0), b"z" * 10))
    ((key, stored),) = cache._entries.items()
    assert gc.is_tracked(key)
    assert gc.is_tracked(stored)
    gc.collect()
    # Exact tuples of ints and bytes: later passes no longer traverse them.
    assert not gc.is_tracked(key)
    assert not gc.is_tracked(stored)
    assert cache.get(position(1, 0)) == Entry(position(1, 0), b"z" * 10)


def test_infos_of_entries_already_evicted_are_dropped_and_a_run_into_the_cache_kept() -> None:
    """A lone cursor's read evicts what it read before the reader reports its facts: such a
    run is dropped whole. A run whose head was evicted but whose tail is cached keeps the
    tail's facts."""
    cache = CacheBudget(max_bytes=1000).cache()
    for e in range(6):
        cache.insert(Entry(position(1, e), b"w"))
    assert cache.evict_before(position(1, 3)) == 3
    cache.remember([(position(1, e), (1, b"old", 0, None)) for e in range(3)])
    assert [e.info for e in cache.get_run([position(1, e) for e in range(3, 6)])] == [None] * 3
    cache.remember([(position(1, e), (1, b"new", 0, None)) for e in range(2, 5)])
    infos = [e.info for e in cache.get_run([position(1, e) for e in range(3, 6)])]
    assert infos == [(1, b"new", 0, None), (1, b"new", 0, None), None]
    cache.remember([])  # nothing to keep
    empty = CacheBudget(max_bytes=1000).cache()
    empty.remember([(position(1, 0), (1, b"", 0, None))])
    assert len(empty) == 0


def test_a_reader_s_info_stays_with_the_cached_entry() -> None:
    cache = CacheBudget(max_bytes=1000).cache()
    for e in range(3):
        cache.insert(Entry(position(1, e), b"w"))
    facts = (1, b"key", 0, None)
    cache.remember([(position(1, 1), facts), (position(1, 7), (2, b"", 0, None))])
    assert position(1, 7) not in cache  # not cached: nothing kept for it
    run = cache.get_run([position(1, e) for e in range(3)])
    assert [e.info for e in run] == [None, facts, None]
    assert cache.get(position(1, 1)) == Entry(position(1, 1), b"w", facts)
    assert cache.evict_before(position(1, 2)) == 2  # evicting drops it with the entry
    assert cache.bytes == 1
    gc.collect()
    # The kept facts are an exact tuple too: the entry stays out of the cyclic GC.
    cache.remember([(position(1, 2), (1, b"", 0, None))])
    gc.collect()
    ((_, stored),) = cache._entries.items()
    assert not gc.is_tracked(stored)
