"""The delayed-delivery index: entries that must not be dispatched before their time.

A Shared or Key_Shared subscription puts an entry whose ``deliver_at_time`` lies in the future
here instead of handing it to a consumer (Pulsar's ``InMemoryDelayedDeliveryTracker``); when
it falls due the subscription moves it to its redelivery queue and replays it like any other.

Layout (memory is the point: an index may hold millions of entries): time buckets of
``tick_ms``, keyed by the end of their tick, each an ``array('q')`` of ``ledger_id, entry_id,
sticky_hash`` triples (``-1``: no Key_Shared slot) — three machine words per entry, no object
per entry; a min-heap of bucket keys says which bucket falls due next. An entry is due at the
end of its tick, never before its ``deliver_at`` time and at most one tick after it (delivery
is never early; ``tick_ms`` trades timer wake-ups for lateness). docs/benchmarks.md has the
measured bytes per entry.

Bounds: the index itself does not refuse entries; the subscription stops reading new entries
while :attr:`DelayedDeliveryIndex.full` (``len >= limit``) — they stay in the log and are read
once the index drains — so the index grows past ``limit`` by at most one read step.

A caller releases a bounded number per call (``due(now, limit)``): a million entries due at
the same moment must not block its loop, nor flood the redelivery queue at once.

``last_position`` (no lower than any position held) lets the caller clear the index at once when
its cursor's mark-delete moves past everything held (skip all, clear backlog, expiry).

Positions are not de-duplicated: the caller adds each entry once per read of the cursor and
clears the index when the cursor is reset. Acknowledged positions are dropped by the caller
when they come out (an entry acked before it is due is never dispatched).

Mutable; owned by one subscription's task; no awaits, no I/O. Clock values are epoch
milliseconds chosen by the caller (``deliver_at_time`` is the producer's wall clock).
"""

from __future__ import annotations

import heapq
from array import array

from magnetar.ids import EntryId, LedgerId
from magnetar.managed_ledger.position import Position

NO_SLOT = -1
_STRIDE = 3


class DelayedDeliveryIndex:
    """Positions by due time, in ``tick_ms`` buckets; see the module docstring."""

    def __init__(self, tick_ms: int = 1000, limit: int = 1_000_000) -> None:
        if tick_ms < 1:
            raise ValueError(f"tick_ms must be at least 1, got {tick_ms}")
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        self.tick_ms = tick_ms
        self.limit = limit
        self._buckets: dict[int, array[int]] = {}
        self._due_heap: list[int] = []
        self._len = 0
        # At least the highest position held (the highest added since it was last empty).
        self.last_position: Position | None = None

    def __len__(self) -> int:
        return self._len

    def __bool__(self) -> bool:
        return self._len > 0

    @property
    def full(self) -> bool:
        """The caller should read no new entries until some fall due."""
        return self._len >= self.limit

    def bucket_of(self, deliver_at_ms: int) -> int:
        """The end of the tick holding ``deliver_at_ms``: when its entries fall due."""
        tick = self.tick_ms
        return -(-deliver_at_ms // tick) * tick

    def add(self, position: Position, deliver_at_ms: int, sticky_hash: int | None = None) -> None:
        """Hold ``position`` until ``deliver_at_ms`` (epoch ms)."""
        key = self.bucket_of(deliver_at_ms)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = array("q")
            heapq.heappush(self._due_heap, key)
        bucket.append(position.ledger_id)
        bucket.append(position.entry_id)
        bucket.append(NO_SLOT if sticky_hash is None else sticky_hash)
        self._len += 1
        if self.last_position is None or position > self.last_position:
            self.last_position = position

    def next_due_time(self) -> int | None:
        """When the earliest bucket falls due (epoch ms), None if empty: the caller's timer."""
        return self._due_heap[0] if self._due_heap else None

    def due(self, now_ms: int, limit: int | None = None) -> list[tuple[Position, int | None]]:
        """Entries due at ``now_ms`` with their sticky hashes, earliest buckets first, sorted by
        position; at most ``limit`` of them (the rest stay for the next call). They leave."""
        out: list[tuple[Position, int | None]] = []
        heap, buckets = self._due_heap, self._buckets
        while heap and heap[0] <= now_ms and (limit is None or len(out) < limit):
            key = heap[0]
            bucket = buckets[key]
            count = len(bucket) // _STRIDE
            take = count if limit is None else min(count, limit - len(out))
            for i in range(0, take * _STRIDE, _STRIDE):
                pos = Position(LedgerId(bucket[i]), EntryId(bucket[i + 1]))
                slot = bucket[i + 2]
                out.append((pos, None if slot == NO_SLOT else slot))
            if take == count:
                heapq.heappop(heap)
                del buckets[key]
            else:
                del bucket[: take * _STRIDE]
        self._len -= len(out)
        if not self._len:
            self.last_position = None
        out.sort(key=lambda item: item[0])
        return out

    def drain(self, limit: int | None = None) -> list[tuple[Position, int | None]]:
        """Entries due or not (delayed delivery was turned off), as :meth:`due` returns them."""
        return self.due(max(self._due_heap), limit) if self._due_heap else []

    def clear(self) -> None:
        """Forget everything (the cursor was reset: its entries will be read again)."""
        self._buckets.clear()
        self._due_heap.clear()
        self._len = 0
        self.last_position = None
