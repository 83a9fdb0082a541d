"""A ledger open for reading (BookKeeper's ``ReadOnlyLedgerHandle``).

``read(first, last)`` returns entries ``first..last`` inclusive, each from one replica of its
write set, trying replicas in write-set order (which starts at ``e mod E``, spreading reads over
the ensemble) and moving on after an error, a missing entry or a :class:`DigestMismatch`. When
every bookie of the ensemble holds every entry (Wq == E) a range is first streamed from one
bookie, falling back entry by entry for whatever that stream did not deliver.

Bounds: a CLOSED ledger can be read up to its last entry; an OPEN one up to the last-add-
confirmed learned from the ensemble (refreshed once when a read goes beyond it). Anything past
the bound is :class:`NoSuchEntry`.

Concurrency: methods run on the loop; ``read`` fans out at most ``read_concurrency`` entries.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass

from magnetar.backoff import BOOKIE_RPC, retry
from magnetar.ids import BookieId, EntryId, LedgerId
from magnetar.ledger.bookie_registry import BookiePool
from magnetar.ledger.config import LedgerClientConfig
from magnetar.ledger.digest import verify_digest
from magnetar.ledger.distribution import write_set
from magnetar.ledger.errors import (
    BookieRejected,
    BookieUnavailable,
    DigestMismatch,
    LedgerError,
    NoSuchEntry,
)
from magnetar.ledger.metadata import LedgerMetadataView, VersionedLedgerMetadata
from magnetar.telemetry import get_logger
from magnetar.wire import bookie_pb2

log = get_logger(__name__)

_MISSING = (bookie_pb2.NO_SUCH_ENTRY, bookie_pb2.NO_SUCH_LEDGER)


@dataclass(frozen=True)
class LedgerEntry:
    ledger_id: LedgerId
    entry_id: EntryId
    payload: bytes


def entry_from_response(
    ledger_id: int, entry_id: int, response: bookie_pb2.ReadEntryResponse, bookie: BookieId
) -> LedgerEntry:
    """Check an OK response's entry (ids and digest) and convert it."""
    entry = response.entry
    if entry.ledger_id != ledger_id or entry.entry_id != entry_id:
        raise DigestMismatch(ledger_id, entry_id, bookie)
    verify_digest(
        entry.ledger_id,
        entry.entry_id,
        entry.last_add_confirmed,
        entry.payload,
        entry.digest,
        bookie_id=bookie,
    )
    return LedgerEntry(LedgerId(ledger_id), EntryId(entry_id), entry.payload)


class ReadHandle:
    def __init__(
        self,
        meta: VersionedLedgerMetadata,
        *,
        pool: BookiePool,
        config: LedgerClientConfig,
        last_add_confirmed: int = -1,
    ) -> None:
        self.ledger_id = LedgerId(meta.ledger_id)
        self._meta = meta
        self._pool = pool
        self._config = config
        self._lac = last_add_confirmed

    @property
    def metadata(self) -> LedgerMetadataView:
        return self._meta.metadata

    @property
    def last_add_confirmed(self) -> EntryId:
        if self.metadata.is_closed:
            return self.metadata.last_entry_id
        return EntryId(self._lac)

    async def read(self, first: int, last: int) -> list[LedgerEntry]:
        """Entries ``first..last`` inclusive, in order."""
        if first < 0 or last < first:
            raise NoSuchEntry(self.ledger_id, first, f"bad range {first}..{last}")
        if last > self.last_add_confirmed and not self.metadata.is_closed:
            await self.read_last_add_confirmed()
        if last > self.last_add_confirmed:
            bound = "last entry" if self.metadata.is_closed else "last add confirmed"
            raise NoSuchEntry(self.ledger_id, last, f"{bound} is {self.last_add_confirmed}")
        found: dict[int, LedgerEntry] = {}
        if self.metadata.write_quorum == self.metadata.ensemble_size:
            found = await self._read_ranges(first, last)
        slots = asyncio.Semaphore(self._config.read_concurrency)

        async def one(entry_id: int) -> LedgerEntry:
            async with slots:
                return await self._read_entry(entry_id)

        missing = [e for e in range(first, last + 1) if e not in found]
        for entry in await asyncio.gather(*(one(e) for e in missing)):
            found[entry.entry_id] = entry
        return [found[e] for e in range(first, last + 1)]

    async def _read_ranges(self, first: int, last: int) -> dict[int, LedgerEntry]:
        """Stream each segment's part of the range from one bookie; failures leave gaps."""
        found: dict[int, LedgerEntry] = {}
        segments = self.metadata.ensembles
        for index, (seg_first, bookies) in enumerate(segments):
            seg_last = segments[index + 1][0] - 1 if index + 1 < len(segments) else last
            lo, hi = max(first, seg_first), min(last, seg_last)
            if lo > hi:
                continue
            bookie = bookies[lo % len(bookies)]
            try:
                client = self._pool.client(bookie)
                stream = client.read_range(self.ledger_id, lo, hi)
                async with contextlib.aclosing(stream):
                    async for response in stream:
                        if response.status != bookie_pb2.OK:
                            break
                        entry_id = response.entry.entry_id
                        found[entry_id] = entry_from_response(
                            self.ledger_id, entry_id, response, bookie
                        )
            except LedgerError as exc:
                log.info(
                    "read_range_fallback",
                    ledger_id=self.ledger_id,
                    bookie_id=bookie,
                    error=str(exc),
                )
        return found

    async def _read_entry(self, entry_id: int) -> LedgerEntry:
        """Read from any replica; while every replica is unreachable, retry until the deadline.

        A bookie that was just restarted can still be refused by this process's gRPC channel
        for a moment (reconnect backoff, shared across channels to the same address), so an
        all-unavailable round is retried with backoff instead of failing the read at once.
        """
        return await retry(
            lambda: self._read_entry_once(entry_id),
            BOOKIE_RPC,
            retry_on=BookieUnavailable,
            give_up_after_s=self._config.read_timeout_s,
        )

    async def _read_entry_once(self, entry_id: int) -> LedgerEntry:
        view = self.metadata
        ensemble = view.ensemble_for(entry_id)
        bookies = [ensemble[p] for p in write_set(entry_id, len(ensemble), view.write_quorum)]
        errors: list[LedgerError] = []
        missing = 0
        for bookie in bookies:
            try:
                response = await self._pool.client(bookie).read_entry(self.ledger_id, entry_id)
                if response.status == bookie_pb2.OK:
                    return entry_from_response(self.ledger_id, entry_id, response, bookie)
                if response.status in _MISSING:
                    missing += 1
                else:
                    errors.append(BookieRejected(bookie, bookie_pb2.Status.Name(response.status)))
            except (BookieUnavailable, DigestMismatch) as exc:
                errors.append(exc)
        if missing == len(bookies) or not errors:
            raise NoSuchEntry(self.ledger_id, entry_id, "no replica holds it")
        # An unreachable replica may still hold the entry: report that (the caller retries).
        unreachable = [e for e in errors if isinstance(e, BookieUnavailable)]
        raise (unreachable or errors)[-1]

    async def read_last_add_confirmed(self) -> EntryId:
        """Ask the current ensemble for the highest LAC any of them saw (never goes down)."""
        if self.metadata.is_closed:
            return self.metadata.last_entry_id
        bookies = self.metadata.current_ensemble

        async def ask(bookie: BookieId) -> int | None:
            try:
                response = await self._pool.client(bookie).read_lac(self.ledger_id)
            except BookieUnavailable:
                return None
            if response.status == bookie_pb2.OK:
                return int(response.last_add_confirmed)
            if response.status in _MISSING:
                return -1
            return None

        answers = [a for a in await asyncio.gather(*(ask(b) for b in bookies)) if a is not None]
        if not answers:
            raise BookieUnavailable(",".join(bookies), "no bookie answered read_lac")
        self._lac = max(self._lac, *answers)
        return EntryId(self._lac)

    async def close(self) -> None:
        """Nothing held per handle today (connections belong to the client); kept for the API."""
