"""Key_Shared: which consumer owns a sticky-key hash slot, and the per-key ordering guards.

Selectors map a slot (``sticky_key_hash(key)``, ``0..65535``) to a consumer:

* :class:`AutoSplitSelector` (mode AUTO_SPLIT) — the classic *hash range split* of Pulsar's
  ``HashRangeAutoSplitStickyKeyConsumerSelector`` (chosen over a consistent-hash ring because it
  is deterministic, needs no replica points and reports plain ranges in stats). The first
  consumer owns every slot. A joining consumer takes the lower half of the biggest range (ties:
  the lowest range). A leaving consumer's range goes to the owner of the next range up; if it
  held the top range, the owner of the range below extends up to the top. Slots stay covered
  while anyone is subscribed.
* :class:`StickySelector` (mode STICKY) — every consumer brings explicit inclusive ranges
  (``KeySharedMeta.hashRanges``); invalid, empty or overlapping ranges are refused with
  :class:`ConsumerAssignError`. A slot nobody covers has no consumer: its entries wait.

Per-key order while membership changes (Pulsar's classic rules, plus one guard):

* :class:`RecentlyJoined` — the *read-position-at-join* rule. A consumer that joins while entries
  before the cursor's read position are still unacked is "recently joined" with
  ``limit = read position at join``: it may only receive entries before that limit (replays), and
  while replaying, only those before the smallest limit of all recently joined consumers. Once
  every entry before its limit is acked (the oldest unacked position is >= the limit) it is
  released and receives everything.
* The *draining* guard (the dispatcher plan applies it, fed by
  :meth:`PendingAcks.holders_of_hash`): an entry of slot ``h`` goes to its selected consumer only if
  no other consumer still holds unacked entries of ``h``. This closes the gap the join rule
  leaves when a leave moves a slot to an old consumer while a third one still holds that slot's
  entries (Pulsar 4 fixed the same hole with "draining hashes", PIP-379).
* New reads of a slot that has entries waiting for redelivery are held back (order of replays).

Drive from the subscription task::

    sel = make_key_shared_selector(meta)          # first consumer fixes the mode
    sel.add(info)                                  # may raise ConsumerAssignError / ConsumerBusy
    recent.joined(info.key, read_position=cursor.read_position, oldest_unacked=oldest)
    ...
    recent.release(oldest_unacked)                 # after acks move the mark-delete position
    view = KeySharedView(sel.select, recent.limits(), pending.holders_of_hash)
    plan = plan_dispatch(SubType.KEY_SHARED, slots, entries, key_shared=view, ...)
    sel.remove(key); recent.left(key)              # consumer closed

Mutable objects owned by one subscription's task; no awaits, no I/O.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Mapping
from typing import Protocol

from magnetar.broker.dispatch.consumers import (
    ConsumerInfo,
    ConsumerKey,
    HashRange,
    KeySharedMeta,
    KeySharedMode,
)
from magnetar.broker.dispatch.errors import ConsumerAssignError, ConsumerBusy
from magnetar.broker.dispatch.sticky_key import RANGE_SIZE
from magnetar.managed_ledger.position import Position


class KeySharedSelector(Protocol):
    """Slot → consumer for one Key_Shared subscription."""

    @property
    def mode(self) -> KeySharedMode: ...

    def add(self, consumer: ConsumerInfo) -> None: ...

    def remove(self, key: ConsumerKey) -> bool: ...

    def select(self, slot: int) -> ConsumerKey | None: ...

    def ranges(self) -> dict[ConsumerKey, list[HashRange]]: ...


def _check_mode(consumer: ConsumerInfo, mode: KeySharedMode) -> KeySharedMeta:
    meta = consumer.key_shared or KeySharedMeta()
    if meta.mode != mode:
        raise ConsumerBusy(
            f"Key_Shared subscription is in mode {mode.name}, "
            f"the consumer asked for {meta.mode.name}"
        )
    return meta


class AutoSplitSelector:
    """AUTO_SPLIT by hash range split (see the module docstring)."""

    def __init__(self) -> None:
        # Sorted upper bounds in 1..RANGE_SIZE and their owners (Pulsar's rangeMap): slot s
        # belongs to the owner of the smallest bound >= s. RANGE_SIZE is present while non-empty.
        self._bounds: list[int] = []
        self._owners: dict[int, ConsumerKey] = {}
        self._bound_of: dict[ConsumerKey, int] = {}

    @property
    def mode(self) -> KeySharedMode:
        return KeySharedMode.AUTO_SPLIT

    def add(self, consumer: ConsumerInfo) -> None:
        _check_mode(consumer, KeySharedMode.AUTO_SPLIT)
        if consumer.key in self._bound_of:
            raise ConsumerBusy(f"consumer {consumer.key} is already subscribed")
        if not self._bounds:
            self._put(RANGE_SIZE, consumer.key)
            return
        best, best_size = RANGE_SIZE, 0
        lower = 0
        for bound in self._bounds:
            if bound - lower > best_size:
                best, best_size = bound, bound - lower
            lower = bound
        if best_size <= 1:
            raise ConsumerAssignError(
                f"No more hash range can be assigned: {len(self._bounds)} consumers already"
            )
        self._put(best - (best_size >> 1), consumer.key)

    def remove(self, key: ConsumerKey) -> bool:
        bound = self._bound_of.pop(key, None)
        if bound is None:
            return False
        i = bisect.bisect_left(self._bounds, bound)
        del self._bounds[i]
        del self._owners[bound]
        if bound == RANGE_SIZE and self._bounds:
            # The top range has no next range up: the range below extends to the top.
            below = self._bounds.pop()
            owner = self._owners.pop(below)
            self._put(RANGE_SIZE, owner)
        return True

    def select(self, slot: int) -> ConsumerKey | None:
        if not self._bounds:
            return None
        # Pulsar: rangeMap.ceilingEntry(hash % rangeSize); slots 0..bounds[0] go to the first.
        i = bisect.bisect_left(self._bounds, slot)
        return self._owners[self._bounds[min(i, len(self._bounds) - 1)]]

    def ranges(self) -> dict[ConsumerKey, list[HashRange]]:
        out: dict[ConsumerKey, list[HashRange]] = {}
        lower = 0
        for i, bound in enumerate(self._bounds):
            start = 0 if i == 0 else lower + 1
            end = min(bound, RANGE_SIZE - 1)
            out[self._owners[bound]] = [HashRange(start, end)]
            lower = bound
        return out

    def _put(self, bound: int, key: ConsumerKey) -> None:
        bisect.insort(self._bounds, bound)
        self._owners[bound] = key
        self._bound_of[key] = bound


class StickySelector:
    """STICKY: explicit, non-overlapping ranges per consumer."""

    def __init__(self) -> None:
        self._ranges: list[tuple[HashRange, ConsumerKey]] = []  # sorted by start

    @property
    def mode(self) -> KeySharedMode:
        return KeySharedMode.STICKY

    def add(self, consumer: ConsumerInfo) -> None:
        meta = _check_mode(consumer, KeySharedMode.STICKY)
        if any(owner == consumer.key for _, owner in self._ranges):
            raise ConsumerBusy(f"consumer {consumer.key} is already subscribed")
        wanted = sorted(meta.hash_ranges)
        if not wanted:
            raise ConsumerAssignError("Ranges for KeyShared policy must not be empty")
        for r in wanted:
            if not r.is_valid():
                raise ConsumerAssignError(
                    f"Invalid hash range {r}: bounds must satisfy 0 <= start <= end <= "
                    f"{RANGE_SIZE - 1}"
                )
        for a, b in itertools.pairwise(wanted):
            if a.overlaps(b):
                raise ConsumerAssignError(f"Ranges {a} and {b} of the consumer overlap")
        for r in wanted:
            for taken, owner in self._ranges:
                if r.overlaps(taken):
                    raise ConsumerAssignError(
                        f"Range conflict with consumer {owner}: {r} overlaps {taken}"
                    )
        self._ranges.extend((r, consumer.key) for r in wanted)
        self._ranges.sort()

    def remove(self, key: ConsumerKey) -> bool:
        before = len(self._ranges)
        self._ranges = [(r, owner) for r, owner in self._ranges if owner != key]
        return len(self._ranges) != before

    def select(self, slot: int) -> ConsumerKey | None:
        i = bisect.bisect_right(self._ranges, slot, key=lambda item: item[0].start) - 1
        if i >= 0 and slot in self._ranges[i][0]:
            return self._ranges[i][1]
        return None

    def ranges(self) -> dict[ConsumerKey, list[HashRange]]:
        out: dict[ConsumerKey, list[HashRange]] = {}
        for r, owner in self._ranges:
            out.setdefault(owner, []).append(r)
        return out


def make_key_shared_selector(meta: KeySharedMeta | None) -> KeySharedSelector:
    """The selector for a subscription whose first consumer sent ``meta``."""
    mode = (meta or KeySharedMeta()).mode
    if mode == KeySharedMode.STICKY:
        return StickySelector()
    return AutoSplitSelector()


class RecentlyJoined:
    """Pulsar's "recently joined consumers": the read-position-at-join rule."""

    def __init__(self) -> None:
        self._limits: dict[ConsumerKey, Position] = {}

    def joined(
        self, key: ConsumerKey, read_position: Position, oldest_unacked: Position | None
    ) -> None:
        """Record a join; ``oldest_unacked`` is the first read-but-unacked position, if any."""
        if oldest_unacked is not None and oldest_unacked < read_position:
            self._limits[key] = read_position

    def left(self, key: ConsumerKey) -> None:
        self._limits.pop(key, None)

    def __len__(self) -> int:
        """Consumers still held back (none: :meth:`release` has nothing to do)."""
        return len(self._limits)

    def release(self, oldest_unacked: Position | None) -> list[ConsumerKey]:
        """Release consumers whose limit is reached by the oldest unacked position."""
        released = [
            k
            for k, limit in self._limits.items()
            if oldest_unacked is None or limit <= oldest_unacked
        ]
        for k in released:
            del self._limits[k]
        return released

    def limits(self) -> Mapping[ConsumerKey, Position]:
        return dict(self._limits)
