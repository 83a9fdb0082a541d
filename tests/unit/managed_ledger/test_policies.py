"""Rollover and trimming decisions, the entry cache and the ledger layout (pure cores)."""

from __future__ import annotations

from magnetar.ids import LedgerId
from magnetar.managed_ledger.entry_cache import CacheBudget, Entry
from magnetar.managed_ledger.layout import LedgerLayout
from magnetar.managed_ledger.position import position
from magnetar.managed_ledger.rollover import RolloverPolicy
from magnetar.managed_ledger.trimming import LedgerInfo, RetentionPolicy, ledgers_to_trim


def test_rollover_by_entries_bytes_age() -> None:
    p = RolloverPolicy(max_entries=10, max_bytes=100, max_age_s=5)
    assert not p.should_rollover(9, 99, 4.9)
    assert p.should_rollover(10, 0, 0)
    assert p.should_rollover(1, 100, 0)
    assert p.should_rollover(1, 0, 5)
    assert not p.should_rollover(0, 0, 500)  # an empty ledger never rolls by age


def test_rollover_limits_disabled_at_zero() -> None:
    assert not RolloverPolicy(max_entries=0, max_bytes=0, max_age_s=0).should_rollover(
        10**9, 10**12, 1e9
    )


def test_rollover_waits_for_the_minimum_age() -> None:
    # Pulsar's managedLedgerMinLedgerRolloverTimeMinutes: a full ledger younger than the
    # minimum keeps taking entries.
    p = RolloverPolicy(max_entries=10, max_bytes=100, max_age_s=50, min_age_s=30)
    assert not p.should_rollover(10, 0, 29.9)
    assert not p.should_rollover(1, 100, 29.9)
    assert p.should_rollover(10, 0, 30)
    assert p.should_rollover(1, 100, 30)
    assert not p.should_rollover(1, 0, 49.9)
    assert p.should_rollover(1, 0, 50)


def _ledgers() -> list[LedgerInfo]:
    # three closed ledgers of 10 entries / 100 bytes closed at t=1000, 2000, 3000; current last.
    return [
        LedgerInfo(LedgerId(1), 10, 100, 1000),
        LedgerInfo(LedgerId(2), 10, 100, 2000),
        LedgerInfo(LedgerId(3), 10, 100, 3000),
        LedgerInfo(LedgerId(4), 0, 0, 0),
    ]


def test_trim_only_ledgers_behind_slowest_mark_delete() -> None:
    none = RetentionPolicy(0, 0)
    assert ledgers_to_trim(_ledgers(), position(1, 8), none, 10_000) == []
    assert ledgers_to_trim(_ledgers(), position(1, 9), none, 10_000) == [1]
    assert ledgers_to_trim(_ledgers(), position(3, 0), none, 10_000) == [1, 2]
    # The current ledger is never trimmed, even when fully consumed.
    assert ledgers_to_trim(_ledgers(), position(4, 5), none, 10_000) == [1, 2, 3]


def test_trim_without_durable_cursors_takes_every_closed_ledger() -> None:
    assert ledgers_to_trim(_ledgers(), None, RetentionPolicy(0, 0), 10_000) == [1, 2, 3]


def test_retention_time_keeps_recent_ledgers() -> None:
    # retention 1.5 s, now 3200 ms: ledger 1 (closed at 1000) expired, 2 (2000) not.
    r = RetentionPolicy(time_s=1.5, size_bytes=-1)
    assert ledgers_to_trim(_ledgers(), position(4, 0), r, 3200) == [1]


def test_retention_size_keeps_newest_bytes() -> None:
    # infinite time; keep at most 150 bytes: deleting ledger 1 leaves 200 > 150, so 2 goes too.
    r = RetentionPolicy(time_s=-1, size_bytes=150)
    assert ledgers_to_trim(_ledgers(), position(4, 0), r, 10_000) == [1, 2]
    assert ledgers_to_trim(_ledgers(), position(4, 0), RetentionPolicy(-1, -1), 10_000) == []


def test_entry_cache_byte_bound_evicts_oldest_across_caches() -> None:
    budget = CacheBudget(max_bytes=30)
    a, b = budget.cache(), budget.cache()
    a.insert(Entry(position(1, 0), b"x" * 10))
    b.insert(Entry(position(7, 0), b"y" * 10))
    a.insert(Entry(position(1, 1), b"x" * 10))
    b.insert(Entry(position(7, 1), b"y" * 10))  # over budget: the oldest (a's 1:0) goes
    assert budget.used_bytes == 30
    assert a.get(position(1, 0)) is None
    assert a.get(position(1, 1)) == Entry(position(1, 1), b"x" * 10)
    assert len(b) == 2


def test_entry_cache_evicts_before_slowest_reader() -> None:
    budget = CacheBudget(max_bytes=1000)
    c = budget.cache()
    for e in range(5):
        c.insert(Entry(position(1, e), b"z"))
    assert c.evict_before(position(1, 3)) == 3
    assert [c.get(position(1, e)) is not None for e in range(5)] == [False] * 3 + [True] * 2
    budget.release(c)
    assert budget.used_bytes == 0


def test_entry_cache_disabled_and_oversized() -> None:
    c = CacheBudget(max_bytes=0).cache()
    c.insert(Entry(position(1, 0), b"a"))
    assert len(c) == 0
    c2 = CacheBudget(max_bytes=2).cache()
    c2.insert(Entry(position(1, 0), b"abc"))
    assert len(c2) == 0


def test_layout_navigation() -> None:
    layout = LedgerLayout([(1, 2), (3, 0), (5, 3)])
    assert layout.next_position(position(1, 0)) == position(1, 1)
    assert layout.next_position(position(1, 1)) == position(5, 0)
    assert layout.next_position(position(2, 7)) == position(5, 0)  # a trimmed/unknown ledger
    assert layout.next_position(position(5, 2)) is None
    assert layout.first_at_or_after(position(1, 2)) == position(5, 0)
    assert layout.last_position() == position(5, 2)
    assert layout.count_between(position(1, -1), position(5, 2)) == 5
    assert layout.count_between(position(1, 0), position(5, 0)) == 2
    assert layout.end_position() == position(5, 3)
    assert LedgerLayout([(1, 0)]).last_position() == position(1, -1)


def test_the_held_tail_stays_as_long_as_the_pin_allows_without_any_read() -> None:
    """With no cursor the managed ledger holds each confirmed run aside and moves the pin to
    the last-add-confirmed the bookies know: with nobody reading, what is held never grows past
    the runs at or after the pin (the claim that it is bounded by the add pipeline), and none of
    it is charged to the budget; a read then finds exactly the pinned tail."""
    budget = CacheBudget(max_bytes=1 << 20)
    c = budget.cache()
    for run in range(1000):
        first = run * 10
        # Each run is confirmed carrying the LAC of two runs back (adds in flight).
        c.pinned_from = position(1, max(0, first - 20))
        c.hold_run([position(1, first + i) for i in range(10)], [b"e"] * 10)
        assert len(c._held) <= 3
        assert budget.used_bytes == 0
    assert [c.get(position(1, e)) is not None for e in (9969, 9970, 9999)] == [False, True, True]
    assert budget.used_bytes == 30
