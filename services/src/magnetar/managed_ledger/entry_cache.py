"""The tail cache of recently added entries, bounded in bytes across every managed ledger.

Each managed ledger has an :class:`EntryCache` holding the entries it added, keyed by position
in insertion (= position) order, so that cursors that keep up read from memory and never hit
the bookies. All caches of one factory charge one :class:`CacheBudget`:

- when an insert takes the budget over ``max_bytes``, entries are evicted oldest first across
  all caches (by a global insertion counter);
- entries below the slowest active cursor's read position are dropped eagerly
  (:meth:`EntryCache.evict_before`): nobody will read them from the cache again.

- entries at or after :attr:`EntryCache.pinned_from` are never evicted: the managed ledger pins
  the tail of the ledger being written that readers cannot fetch from bookies yet (beyond the
  last-add-confirmed the bookies know); it is as long as the add pipeline, so still bounded.
- entries that no cursor is expected to read (the managed ledger has none) are held aside by
  :meth:`EntryCache.hold_run`, a run at a time, not cached one by one: of them only the pinned
  tail is kept, as :meth:`EntryCache.insert_run` then :meth:`EntryCache.evict_before` of the pin
  would keep it, and a run goes whole once it is wholly before the pin. Held entries are not
  charged to the budget. The first read, insert or eviction caches what is held, as those two
  calls would have cached it. Pulsar caches an added entry only while its managed ledger has
  active cursors; this keeps the pinned tail without a dictionary entry per add.

A ``max_bytes`` of 0 disables caching (pinned entries are kept all the same).
Pure and synchronous; used from the event loop only.
"""

from __future__ import annotations

import bisect
import itertools
from collections import OrderedDict
from collections.abc import Sequence
from typing import NamedTuple

from magnetar.managed_ledger.position import Position

# NamedTuple's generated __new__ is a Python-level lambda: the per-entry lines below build
# their tuples with tuple.__new__ directly (about half the cost).
_new_tuple = tuple.__new__


class Entry(NamedTuple):
    """One entry of a managed ledger: its position and payload (a NamedTuple: every added and
    every read entry builds one, in a fifth of a frozen dataclass's time), and what its
    adder or its reader knew of it, if they told the cache (the ``infos`` of
    :meth:`EntryCache.insert_run`, :meth:`EntryCache.remember`): the broker keeps the facts of
    the entry's metadata that its SEND's scan or its dispatcher read, so a cache hit does not
    parse again. Opaque here; None when nobody did (always for entries read from bookies)."""

    position: Position
    data: bytes
    info: object = None


class CacheBudget:
    """The shared byte bound of every EntryCache of one factory."""

    __slots__ = ("_caches", "max_bytes", "used_bytes")

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.used_bytes = 0
        self._caches: list[EntryCache] = []

    def cache(self) -> EntryCache:
        c = EntryCache(self)
        self._caches.append(c)
        return c

    def release(self, cache: EntryCache) -> None:
        cache.clear()
        if cache in self._caches:
            self._caches.remove(cache)

    def _make_room(self) -> None:
        while self.used_bytes > self.max_bytes:
            victim = self._oldest_nonempty()
            if victim is None or not victim.evict_oldest():
                return

    def _oldest_nonempty(self) -> EntryCache | None:
        candidates = [c for c in self._caches if c.evictable()]
        if not candidates:
            return None
        return min(candidates, key=lambda c: c.oldest_seq)


class EntryCache:
    """Entries of one managed ledger, oldest first."""

    __slots__ = ("_budget", "_entries", "_held", "_held_from", "bytes", "oldest_seq", "pinned_from")

    _clock = 0  # global insertion counter: orders evictions between caches

    def __init__(self, budget: CacheBudget) -> None:
        self._budget = budget
        # (ledger id, entry id) -> (payload, insertion number, reader's info or None), plain
        # tuples of ints and bytes (the broker's info is a plain tuple too): CPython's cyclic
        # GC untracks such exact tuples in the first pass that sees them, so a full cache is
        # one tracked dict rather than three tracked objects per entry that every
        # older-generation pass would traverse again (a NamedTuple, even of ints, stays
        # tracked for life). A Position looks up a plain-tuple key: it is a tuple with the
        # same hash and equality.
        self._entries: OrderedDict[tuple[int, int], tuple[bytes, int, object]] = OrderedDict()
        self.bytes = 0
        self.oldest_seq = 0
        self.pinned_from: Position | None = None
        # hold_run's runs (positions, payloads, infos), oldest first, and the pin they were
        # last kept under: what is before it would have been evicted.
        self._held: list[tuple[Sequence[Position], Sequence[bytes], Sequence[object] | None]] = []
        self._held_from: Position | None = None

    def __len__(self) -> int:
        return len(self._entries)

    def __bool__(self) -> bool:
        return bool(self._entries)

    def __contains__(self, pos: object) -> bool:
        if self._held:
            self._unhold()
        return pos in self._entries

    def evictable(self) -> bool:
        if not self._entries:
            return False
        return self.pinned_from is None or next(iter(self._entries)) < self.pinned_from

    def insert(self, entry: Entry) -> None:
        if self._held:
            self._unhold()
        pinned = self.pinned_from is not None and entry.position >= self.pinned_from
        if not pinned and (self._budget.max_bytes <= 0 or len(entry.data) > self._budget.max_bytes):
            return
        pos = entry.position
        if pos in self._entries:
            return
        EntryCache._clock += 1
        if not self._entries:
            self.oldest_seq = EntryCache._clock
        self._entries[(pos[0], pos[1])] = (entry.data, EntryCache._clock, entry.info)
        self._charge(len(entry.data))
        self._budget._make_room()

    def get(self, pos: Position) -> Entry | None:
        if self._held:
            self._unhold()
        found = self._entries.get(pos)
        return None if found is None else Entry(pos, found[0], found[2])

    def get_run(self, positions: Sequence[Position], start: int = 0) -> list[Entry]:
        """The cached entries of ``positions[start:]`` up to the first one not cached (one call
        for a whole read that the cache serves, instead of one :meth:`get` per position)."""
        if self._held:
            self._unhold()
        entries = self._entries
        out: list[Entry] = []
        for i in range(start, len(positions)):
            pos = positions[i]
            found = entries.get(pos)
            if found is None:
                break
            out.append(_new_tuple(Entry, (pos, found[0], found[2])))
        return out

    def remember(self, infos: Sequence[tuple[Position, object]]) -> None:
        """Keep each ``(position, info)`` with its cached entry (a position no longer cached
        is skipped); :meth:`get` and :meth:`get_run` hand it back with the entry.

        ``infos`` in position order, as a reader reads: when the last is before the oldest
        cached entry, none is cached (a lone cursor's read evicts what it read), and no
        position is looked up. Out of order, some facts may go unkept: a later read parses
        the entry again, nothing else changes."""
        if self._held:
            self._unhold()
        entries = self._entries
        if not entries or not infos or infos[-1][0] < next(iter(entries)):
            return
        for pos, info in infos:
            found = entries.get(pos)
            if found is not None:
                entries[pos] = (found[0], found[1], info)

    def evict_oldest(self) -> bool:
        if not self.evictable():
            return False
        _, (data, _, _) = self._entries.popitem(last=False)
        self._charge(-len(data))
        self._refresh_oldest()
        return True

    def insert_run(
        self,
        positions: Sequence[Position],
        datas: Sequence[bytes],
        infos: Sequence[object] | None = None,
    ) -> None:
        """:meth:`insert` for a run of newly confirmed entries (in order, after every entry
        this cache holds; parallel lists), with the charge and the budget's eviction done once
        for the run: the caches then hold what inserting them one by one would have left
        (tests/property/test_entry_cache_runs.py). ``infos``: each entry's
        :attr:`Entry.info` from the start (as :meth:`remember` would keep it), or None."""
        if self._held:
            self._unhold()
        self._insert_run(positions, datas, infos)

    def _insert_run(
        self,
        positions: Sequence[Position],
        datas: Sequence[bytes],
        infos: Sequence[object] | None,
    ) -> None:
        entries = self._entries
        pinned_from = self.pinned_from
        max_bytes = self._budget.max_bytes
        clock = EntryCache._clock
        was_empty = not entries
        added = 0
        known = iter(infos) if infos is not None else itertools.repeat(None)
        for pos, data in zip(positions, datas, strict=True):
            info = next(known)
            pinned = pinned_from is not None and pos >= pinned_from
            if not pinned and (max_bytes <= 0 or len(data) > max_bytes):
                continue
            if pos in entries:
                continue
            clock += 1
            entries[(pos[0], pos[1])] = (data, clock, info)
            added += len(data)
        if clock == EntryCache._clock:
            return
        if was_empty:
            self.oldest_seq = EntryCache._clock + 1
        EntryCache._clock = clock
        self._charge(added)
        self._budget._make_room()

    def evict_before(self, pos: Position) -> int:
        """Drop every entry before ``pos`` (and before :attr:`pinned_from`); return how many.

        Called after every cursor read and ack: the charge and the oldest-sequence refresh are
        done once for the whole run of evicted entries."""
        if self._held:
            self._unhold()
        return self._evict_cached_before(pos)

    def _evict_cached_before(self, pos: Position) -> int:
        entries = self._entries
        pinned = self.pinned_from
        n = freed = 0
        for first in entries:
            if first >= pos or (pinned is not None and first >= pinned):
                break
            n += 1
        for _ in range(n):
            freed += len(entries.popitem(last=False)[1][0])
        if n:
            self._charge(-freed)
            self._refresh_oldest()
        return n

    def evict_ledger(self, ledger_id: int) -> None:
        if self._held:
            self._unhold()
        for key in [k for k in self._entries if k[0] == ledger_id]:
            data = self._entries.pop(key)[0]
            self._charge(-len(data))
        self._refresh_oldest()

    def clear(self) -> None:
        self._held = []
        self._charge(-self.bytes)
        self._entries.clear()

    def hold_run(
        self,
        positions: Sequence[Position],
        datas: Sequence[bytes],
        infos: Sequence[object] | None = None,
    ) -> None:
        """:meth:`insert_run` then :meth:`evict_before` of :attr:`pinned_from` (set: the
        managed ledger pins before it calls) for newly confirmed entries that no cursor is
        expected to read, in their effect on what a later read finds, at a cost per run, not
        per entry (the module docstring): the cached entries before the pin are evicted, the
        held runs wholly before it dropped, and the run held."""
        pinned = self.pinned_from
        assert pinned is not None, "hold_run needs the pin"
        if self._entries:
            self._evict_cached_before(pinned)
        held = self._held
        gone = 0
        for kept, _, _ in held:
            if kept[-1] >= pinned:
                break
            gone += 1
        if gone:
            del held[:gone]
        if positions:
            held.append((positions, datas, infos))
        self._held_from = pinned

    def _unhold(self) -> None:
        """Cache what :meth:`hold_run` holds, from the pin it held it under, as inserting each
        run under that pin would have (the pin is put back after)."""
        held, self._held = self._held, []
        pin = self._held_from
        assert pin is not None
        now, self.pinned_from = self.pinned_from, pin
        try:
            for positions, datas, infos in held:
                start = bisect.bisect_left(positions, pin)  # (positions ascend)
                if start:
                    positions, datas = positions[start:], datas[start:]
                    infos = None if infos is None else infos[start:]
                self._insert_run(positions, datas, infos)
        finally:
            self.pinned_from = now

    def _charge(self, delta: int) -> None:
        self.bytes += delta
        self._budget.used_bytes += delta

    def _refresh_oldest(self) -> None:
        if self._entries:
            self.oldest_seq = next(iter(self._entries.values()))[1]
