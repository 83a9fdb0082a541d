"""Ledger recovery (BookKeeper's ``LedgerRecoveryOp``): fence, find the end, re-replicate, close.

Run by a client opening an OPEN ledger with ``recovery=True`` (the writer is presumed dead):

1. metadata OPEN -> IN_RECOVERY by compare-and-set (already IN_RECOVERY: a previous recovery
   died; carry on; CLOSED: nothing to do);
2. fence the ledger on the last ensemble; proceed only once the fenced bookies cover every write
   set (fewer than Aq unfenced bookies in each), so the old writer can never again gather Aq acks;
3. start after the highest LAC the fenced bookies report (and at least before the last segment,
   whose start proves everything earlier was confirmed);
4. read forward entry by entry from each entry's write set: *present* if any replica returns it
   with a valid digest, *missing* (the end) once more than Wq - Aq replicas say they lack it,
   *undecidable* otherwise (recovery fails, retryable);
5. sum the payload sizes of entries up to the start (for the closed metadata's ``length``:
   entries carry no running length, so this reads them back), re-write every recovered entry
   with recovery adds through a recovery :class:`WriteHandle` (ensemble changes included),
   then close at the last recovered entry; if another client closed it first, accept its end.

The decisions (:func:`fence_complete`, :func:`recovery_start`, :func:`decide_entry`) are pure
and unit-tested; :func:`recover_ledger` is the I/O around them, run in the caller's task.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Sequence

from magnetar.ids import BookieId, LedgerId
from magnetar.ledger.bookie_registry import BookiePool, BookieRegistry
from magnetar.ledger.config import LedgerClientConfig
from magnetar.ledger.distribution import covers_ack_quorums, write_set
from magnetar.ledger.errors import (
    BookieUnavailable,
    DigestMismatch,
    LedgerError,
    LedgerFenced,
    RecoveryFailed,
)
from magnetar.ledger.ledger_manager import LedgerManager
from magnetar.ledger.metadata import LedgerMetadataView, LedgerState, VersionedLedgerMetadata
from magnetar.ledger.read_handle import ReadHandle, entry_from_response
from magnetar.ledger.write_handle import WriteHandle
from magnetar.metadata import BadVersion
from magnetar.telemetry import get_logger
from magnetar.wire import bookie_pb2

log = get_logger(__name__)

_LENGTH_CHUNK = 1000


class EntryOutcome(enum.Enum):
    PRESENT = "present"
    MISSING = "missing"
    UNDECIDABLE = "undecidable"


def fence_complete(
    fenced_positions: Sequence[int], ensemble_size: int, write_quorum: int, ack_quorum: int
) -> bool:
    """Whether the fenced positions leave no write set with Aq unfenced bookies."""
    return covers_ack_quorums(fenced_positions, ensemble_size, write_quorum, ack_quorum)


def recovery_start(fenced_lacs: Sequence[int], last_segment_first: int) -> int:
    """The LAC recovery starts from: the highest reported, at least the last segment's start-1."""
    return max([-1, last_segment_first - 1, *fenced_lacs])


def decide_entry(found: bool, missing: int, write_quorum: int, ack_quorum: int) -> EntryOutcome:
    """One entry's fate from its replicas' answers (``missing``: NO_SUCH_ENTRY/LEDGER count).

    More than Wq - Aq "missing" answers mean Aq replicas can never have acked it, so it was
    never confirmed and the ledger ends before it.
    """
    if found:
        return EntryOutcome.PRESENT
    if missing > write_quorum - ack_quorum:
        return EntryOutcome.MISSING
    return EntryOutcome.UNDECIDABLE


async def recover_ledger(
    ledger_id: LedgerId,
    *,
    manager: LedgerManager,
    pool: BookiePool,
    registry: BookieRegistry,
    config: LedgerClientConfig,
) -> VersionedLedgerMetadata:
    """Recover and close ``ledger_id``; return its CLOSED metadata."""
    meta = await manager.read(ledger_id)
    while meta.metadata.state is LedgerState.OPEN:
        try:
            meta = await manager.write(meta, meta.metadata.with_state(LedgerState.IN_RECOVERY))
        except BadVersion:
            meta = await manager.read(ledger_id)
    if meta.metadata.is_closed:
        return meta
    view = meta.metadata
    log.info("ledger_recovery_started", ledger_id=ledger_id)
    lacs = await _fence(ledger_id, view, pool)
    start = recovery_start(lacs, view.ensembles[-1][0])
    prefix_length = await _length_through(meta, start, pool, config)
    handle = WriteHandle(
        meta,
        pool=pool,
        registry=registry,
        manager=manager,
        config=config,
        recovery=True,
        last_add_confirmed=start,
        length=prefix_length,
    )
    entry_id = start + 1
    recovered = 0
    try:
        while True:
            payload = await _read_for_recovery(ledger_id, entry_id, view, pool)
            if payload is None:
                break
            await handle.append(payload)
            recovered += 1
            entry_id += 1
    except LedgerFenced:
        await handle.abandon()
        current = await manager.read(ledger_id)
        if not current.metadata.is_closed:
            raise
        return current  # a racing recovery closed it first: its end is the end
    except BaseException:
        await handle.abandon()  # leave the ledger IN_RECOVERY for the next attempt
        raise
    try:
        await handle.close()
    except LedgerError as exc:
        log.warning("ledger_recovery_close_failed", ledger_id=ledger_id, error=str(exc))
    current = await manager.read(ledger_id)  # ours, or a racing recovery's close: the same end
    if not current.metadata.is_closed:
        raise RecoveryFailed(ledger_id, "the ledger could not be closed")
    log.info(
        "ledger_recovered",
        ledger_id=ledger_id,
        last_entry_id=current.metadata.last_entry_id,
        recovered_entries=recovered,
    )
    return current


async def _length_through(
    meta: VersionedLedgerMetadata, last: int, pool: BookiePool, config: LedgerClientConfig
) -> int:
    """Payload bytes of entries 0..last, read back (entries carry no running ledger length)."""
    reader = ReadHandle(meta, pool=pool, config=config, last_add_confirmed=last)
    total = 0
    for first in range(0, last + 1, _LENGTH_CHUNK):
        entries = await reader.read(first, min(last, first + _LENGTH_CHUNK - 1))
        total += sum(len(e.payload) for e in entries)
    return total


async def _fence(ledger_id: LedgerId, view: LedgerMetadataView, pool: BookiePool) -> list[int]:
    ensemble = view.current_ensemble

    async def fence_one(bookie: BookieId) -> bookie_pb2.FenceResponse | None:
        try:
            return await pool.client(bookie).fence(ledger_id, view.master_key)
        except BookieUnavailable as exc:
            log.warning("fence_failed", ledger_id=ledger_id, bookie_id=bookie, error=str(exc))
            return None

    responses = await asyncio.gather(*(fence_one(b) for b in ensemble))
    fenced = [i for i, r in enumerate(responses) if r is not None and r.status == bookie_pb2.OK]
    if not fence_complete(fenced, view.ensemble_size, view.write_quorum, view.ack_quorum):
        raise RecoveryFailed(ledger_id, f"only {len(fenced)} of {len(ensemble)} bookies fenced")
    return [
        int(r.last_add_confirmed) for r in responses if r is not None and r.status == bookie_pb2.OK
    ]


async def _read_for_recovery(
    ledger_id: LedgerId, entry_id: int, view: LedgerMetadataView, pool: BookiePool
) -> bytes | None:
    """The entry's payload, or None when it is decidedly missing (the ledger's end)."""
    ensemble = view.ensemble_for(entry_id)
    bookies = [ensemble[p] for p in write_set(entry_id, len(ensemble), view.write_quorum)]

    async def ask(bookie: BookieId) -> bytes | int | LedgerError:
        try:
            response = await pool.client(bookie).read_entry(ledger_id, entry_id)
            if response.status == bookie_pb2.OK:
                return entry_from_response(ledger_id, entry_id, response, bookie).payload
            return int(response.status)
        except (BookieUnavailable, DigestMismatch) as exc:
            return exc

    answers = await asyncio.gather(*(ask(b) for b in bookies))
    payloads = [a for a in answers if isinstance(a, bytes)]
    missing = sum(1 for a in answers if a in (bookie_pb2.NO_SUCH_ENTRY, bookie_pb2.NO_SUCH_LEDGER))
    outcome = decide_entry(bool(payloads), missing, view.write_quorum, view.ack_quorum)
    if outcome is EntryOutcome.PRESENT:
        return payloads[0]
    if outcome is EntryOutcome.MISSING:
        return None
    raise RecoveryFailed(ledger_id, f"cannot tell whether entry {entry_id} exists: {answers}")
