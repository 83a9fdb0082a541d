"""A compacted ledger opened for reading (Pulsar's CompactedTopic): by index and by position.

The compacted ledger is a closed ledger on the bookies whose entries (:mod:`.compacted_entry`)
are in the order of their original positions, every one at or before the *horizon* (the last
position the compaction read). :meth:`CompactedView.find` binary-searches the first entry at or
after a position, one single-entry read per probe, so a view needs no index in memory.

Concurrency: on the broker's loop; shared by the subscriptions reading the compacted view and the
next compaction run (which reads it whole). The owner (:mod:`.topic_compaction`) closes it when a
newer view replaces it; a read of a closed or deleted view fails and the reader retries against
the newer one.
"""

from __future__ import annotations

from magnetar.broker.compaction.compacted_entry import CompactedEntry, decode
from magnetar.ids import LedgerId
from magnetar.managed_ledger import Position
from magnetar.managed_ledger.ledger_access import LedgerReader


class CompactedView:
    """One compacted ledger: ``ledger_id``, ``horizon`` and its ``count`` entries."""

    def __init__(self, ledger_id: LedgerId, horizon: Position, reader: LedgerReader) -> None:
        self.ledger_id = ledger_id
        self.horizon = horizon
        self._reader = reader
        self.count = max(0, reader.metadata.last_entry_id + 1)

    async def entries(self, first: int, last: int) -> list[CompactedEntry]:
        """Entries ``first`` .. ``last`` (inclusive, clamped to the ledger)."""
        last = min(last, self.count - 1)
        if first > last:
            return []
        return [decode(e.payload) for e in await self._reader.read(first, last)]

    async def find(self, start: Position) -> int:
        """The index of the first entry at or after ``start`` (``count`` if there is none)."""
        lo, hi = 0, self.count
        while lo < hi:
            mid = (lo + hi) // 2
            (entry,) = await self.entries(mid, mid)
            if entry.position < start:
                lo = mid + 1
            else:
                hi = mid
        return lo

    async def close(self) -> None:
        await self._reader.close()
