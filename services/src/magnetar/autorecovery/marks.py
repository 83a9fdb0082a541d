"""Under-replication marks: one metadata key per ledger that lacks copies (BookKeeper's
``LedgerUnderreplicationManager``), at ``keys.under_replicated(ledger_id)``.

A mark's value is JSON ``{"missingBookies": [...], "markedMs": N}``: the bookies whose copies of
the ledger's fragments must be made again elsewhere (lost bookies, bookies being decommissioned,
or live bookies found lacking entries by the periodic check). The auditor creates or widens
marks (:meth:`UnderReplicationMarks.mark`, a compare-and-set merge); a replication worker,
holding the ledger's replication lock, removes the mark at the version it read once the ledger
no longer names any of those bookies (:meth:`UnderReplicationMarks.remove`), so a mark widened
meanwhile survives for the next round.

Concurrency: stateless apart from the store handle; any task may call any method, each store
call under a deadline (TimeoutError past it). The codec
(:func:`encode_mark`, :func:`decode_mark`) is pure.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass

from magnetar.ids import BookieId, LedgerId
from magnetar.metadata import BadVersion, MetadataStore, NotFound, keys, update

_CALL_TIMEOUT_S = 10.0  # each store call (a mark's compare-and-set retries included)


@dataclass(frozen=True, order=True)
class UnderReplicationMark:
    ledger_id: LedgerId
    missing: tuple[BookieId, ...]
    marked_ms: int = 0
    version: int = -1  # the store version it was read at (-1: not read from the store)


def encode_mark(missing: Iterable[BookieId], marked_ms: int) -> bytes:
    return json.dumps({"missingBookies": sorted(set(missing)), "markedMs": marked_ms}).encode()


def decode_mark(ledger_id: LedgerId, raw: bytes, version: int = -1) -> UnderReplicationMark:
    """Parse a stored mark; an unreadable one counts as a mark with no bookie named."""
    try:
        body = json.loads(raw)
        missing = tuple(sorted(BookieId(str(b)) for b in body.get("missingBookies", [])))
        marked_ms = int(body.get("markedMs", 0))
    except (ValueError, TypeError, AttributeError):
        return UnderReplicationMark(ledger_id, (), 0, version)
    return UnderReplicationMark(ledger_id, missing, marked_ms, version)


class UnderReplicationMarks:
    def __init__(self, store: MetadataStore) -> None:
        self._store = store

    async def mark(self, ledger_id: LedgerId, missing: Iterable[BookieId]) -> bool:
        """Create the mark or add ``missing`` to it; True when the stored value changed. A mark
        that already names them all is not written (its version, which a worker's removal
        compares, stays)."""
        wanted = set(missing)
        current = await self.get(ledger_id)
        if current is not None and wanted <= set(current.missing):
            return False
        changed = False

        def merge(current: bytes | None) -> bytes:
            nonlocal changed
            if current is None:
                changed = True
                return encode_mark(wanted, int(time.time() * 1000))
            old = decode_mark(ledger_id, current)
            changed = not wanted <= set(old.missing)
            return encode_mark(wanted | set(old.missing), old.marked_ms) if changed else current

        async with asyncio.timeout(_CALL_TIMEOUT_S):
            await update(self._store, keys.under_replicated(ledger_id), merge)
        return changed

    async def list(self) -> list[UnderReplicationMark]:
        """Every mark, by ledger id."""
        async with asyncio.timeout(_CALL_TIMEOUT_S):
            found = await self._store.list(keys.UNDER_REPLICATED_PREFIX)
        return [
            decode_mark(keys.under_replicated_ledger_of(key), v.value, v.version)
            for key, v in found
        ]

    async def count(self) -> int:
        async with asyncio.timeout(_CALL_TIMEOUT_S):
            return len(await self._store.list_keys(keys.UNDER_REPLICATED_PREFIX))

    async def get(self, ledger_id: LedgerId) -> UnderReplicationMark | None:
        async with asyncio.timeout(_CALL_TIMEOUT_S):
            got = await self._store.get(keys.under_replicated(ledger_id))
        return None if got is None else decode_mark(ledger_id, got.value, got.version)

    async def remove(self, mark: UnderReplicationMark) -> bool:
        """Delete the mark if it is still at the version read; False if it changed or went."""
        try:
            async with asyncio.timeout(_CALL_TIMEOUT_S):
                await self._store.delete(keys.under_replicated(mark.ledger_id), mark.version)
        except (BadVersion, NotFound):
            return False
        return True
