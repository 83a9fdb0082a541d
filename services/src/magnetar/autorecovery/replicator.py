"""Re-replicate one ledger: copy its fragments on bad bookies to new ones, then swap them in.

:meth:`LedgerReplicator.replicate` runs under the ledger's replication lock (the worker holds
it) and does, for one ledger:

1. read the metadata; find the bookies to replace (:func:`~.fragments.bookies_to_replace`: the
   marked ones, unless registered again and holding every entry they should — BookKeeper's
   fragment check —, and the ones being decommissioned);
2. if the last segment of an OPEN ledger names one: while the writer lives, leave that segment
   to it (its ensemble change replaces a failed bookie, and a decommissioning bookie refuses its
   adds); once the writer is gone, recover the ledger (fence, read the tail, close) first;
3. for each fragment that may be copied now: choose a target with the placement policy (writable,
   not being decommissioned, not in the segment, rack-aware), read each entry the fragment holds
   from another replica of its write set (digest checked), write it unchanged (same LAC and
   digest, as a recovery add, so a fenced ledger accepts it) to the target and wait until it is
   durable there, then compare-and-set the ledger metadata naming the target instead (re-read and
   re-applied on a version conflict, e.g. with a live writer's ensemble change);
4. report what is left: the ledger is repaired when no bad bookie is named any more.

Bounded: at most ``copy_concurrency`` entries are read or written at once, out of at most
16 times as many scheduled. Failures that may pass
(no replica answered, no target bookie yet) raise :class:`ReplicationFailed` (retryable); the
mark stays and the next round tries again.

Concurrency: one call per ledger at a time (the lock); runs in the worker's task.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Set
from dataclasses import dataclass

from magnetar.autorecovery.errors import ReplicationFailed
from magnetar.autorecovery.fragments import (
    Fragment,
    bookies_to_replace,
    fragment_entries,
    fragments_of,
    lacks_entries,
    open_tail_needs_writer,
)
from magnetar.ids import BookieId, LedgerId
from magnetar.ledger import BookKeeper
from magnetar.ledger.bookie_client import AddRequest
from magnetar.ledger.distribution import write_set
from magnetar.ledger.errors import BookieUnavailable, DigestMismatch, NotEnoughBookies
from magnetar.ledger.metadata import LedgerMetadataView, VersionedLedgerMetadata
from magnetar.ledger.placement import replace_bookie
from magnetar.ledger.read_handle import entry_from_response
from magnetar.ledger.writer_liveness import writer_alive
from magnetar.metadata import BadVersion, MetadataStore
from magnetar.telemetry import get_logger
from magnetar.wire import bookie_pb2

log = get_logger(__name__)

_LISTING_TTL_S = 5.0


@dataclass
class ReplicationStats:
    """Counters read by the autorecovery metrics (on the loop)."""

    bytes_copied: int = 0
    entries_copied: int = 0
    fragments_copied: int = 0
    ledgers_repaired: int = 0
    fragments_in_progress: int = 0


@dataclass(frozen=True)
class Outcome:
    """What one round left: ``remaining`` bad bookies the ledger still names (empty: repaired);
    ``waiting_for_writer``: the open tail names one and its writer is alive."""

    remaining: frozenset[BookieId]
    waiting_for_writer: bool = False


class LedgerReplicator:
    def __init__(
        self,
        bk: BookKeeper,
        store: MetadataStore,
        stats: ReplicationStats,
        *,
        copy_concurrency: int = 64,
    ) -> None:
        self._bk = bk
        self._store = store
        self._stats = stats
        self._slots = asyncio.Semaphore(copy_concurrency)
        self._chunk = copy_concurrency * 16
        self._listings: dict[BookieId, tuple[float, dict[int, list[tuple[int, int]]]]] = {}

    async def _bad(
        self, ledger_id: LedgerId, meta: LedgerMetadataView, marked: Set[BookieId]
    ) -> frozenset[BookieId]:
        decommissioning = self._bk.registry.decommissioning()
        intact = {
            bookie
            for bookie in (set(marked) & meta.all_bookies()) - decommissioning
            if await self._intact(ledger_id, meta, bookie)
        }
        return bookies_to_replace(meta, marked, decommissioning, intact)

    async def _intact(
        self, ledger_id: LedgerId, meta: LedgerMetadataView, bookie: BookieId
    ) -> bool:
        """Whether a marked bookie is registered again and holds every entry it should."""
        if bookie not in self._bk.registry.available():
            return False
        held = await self._holdings(bookie)
        return held is not None and not lacks_entries(meta, bookie, held.get(ledger_id, []))

    async def _holdings(self, bookie: BookieId) -> dict[int, list[tuple[int, int]]] | None:
        """The entry ranges ``bookie`` holds per ledger (None: unreachable), listed at most
        once per :data:`_LISTING_TTL_S`: one listing serves every mark naming that bookie."""
        cached = self._listings.get(bookie)
        if cached is not None and time.monotonic() - cached[0] < _LISTING_TTL_S:
            return cached[1]
        try:
            listing = await self._bk.pool.client(bookie).list_ledgers(include_ranges=True)
        except BookieUnavailable:
            return None
        held = {
            int(item.ledger_id): [(int(r.first), int(r.last)) for r in item.ranges]
            for item in listing
        }
        self._listings[bookie] = (time.monotonic(), held)
        return held

    async def replicate(self, ledger_id: LedgerId, marked: Set[BookieId]) -> Outcome:
        """One round for ``ledger_id`` (see the module docstring). NoSuchLedger propagates."""
        meta = await self._bk.manager.read(ledger_id)
        bad = await self._bad(ledger_id, meta.metadata, marked)
        if not bad:
            return Outcome(frozenset())
        waiting = False
        if open_tail_needs_writer(meta.metadata, bad):
            alive = await writer_alive(self._store, meta.metadata)
            if alive:
                waiting = True
            else:
                log.info("replication_recovering_ledger", ledger_id=ledger_id, writer_alive=alive)
                await self._bk.open_ledger(ledger_id, recovery=True)
                meta = await self._bk.manager.read(ledger_id)
                bad = await self._bad(ledger_id, meta.metadata, marked)
        for fragment in fragments_of(meta.metadata, bad, include_open_tail=False):
            meta = await self._repair(ledger_id, meta, fragment, bad)
        remaining = await self._bad(ledger_id, meta.metadata, marked)
        return Outcome(remaining, waiting and bool(remaining))

    async def _repair(
        self,
        ledger_id: LedgerId,
        meta: VersionedLedgerMetadata,
        fragment: Fragment,
        bad: Set[BookieId],
    ) -> VersionedLedgerMetadata:
        view = meta.metadata
        segment = next(b for f, b in view.ensembles if f == fragment.first)
        registry = self._bk.registry
        try:
            replaced = replace_bookie(
                segment,
                fragment.position,
                registry.writable(),
                failed=bad,
                racks=registry.racks(),
            )
        except NotEnoughBookies as exc:
            raise ReplicationFailed(
                ledger_id,
                f"no writable bookie outside the segment from entry {fragment.first} "
                f"to replace {fragment.bookie}",
            ) from exc
        target = replaced[fragment.position]
        started = time.monotonic()
        self._stats.fragments_in_progress += 1
        try:
            copied, size = await self._copy(ledger_id, view, fragment, target, bad)
        finally:
            self._stats.fragments_in_progress -= 1
        meta = await self._swap(ledger_id, meta, fragment, target)
        self._stats.fragments_copied += 1
        log.info(
            "fragment_replicated",
            ledger_id=ledger_id,
            first_entry_id=fragment.first,
            last_entry_id=fragment.last,
            from_bookie=fragment.bookie,
            to_bookie=target,
            entries=copied,
            bytes=size,
            seconds=round(time.monotonic() - started, 3),
        )
        return meta

    async def _copy(
        self,
        ledger_id: LedgerId,
        view: LedgerMetadataView,
        fragment: Fragment,
        target: BookieId,
        bad: Set[BookieId],
    ) -> tuple[int, int]:
        """Copy every entry of ``fragment`` to ``target``; (entries, payload bytes)."""
        entries = fragment_entries(view, fragment)

        async def one(entry_id: int) -> int:
            async with self._slots:
                entry = await self._read(ledger_id, view, entry_id, fragment.bookie, bad)
                await self._write(target, view, entry)
                self._stats.entries_copied += 1
                self._stats.bytes_copied += len(entry.payload)
                return len(entry.payload)

        sizes: list[int] = []
        step = self._chunk
        for start in range(0, len(entries), step):  # a bounded number of tasks at a time
            sizes += await asyncio.gather(*(one(e) for e in entries[start : start + step]))
        return len(sizes), sum(sizes)

    async def _read(
        self,
        ledger_id: LedgerId,
        view: LedgerMetadataView,
        entry_id: int,
        lost: BookieId,
        bad: Set[BookieId],
    ) -> bookie_pb2.Entry:
        """The stored entry from a replica of its write set: healthy ones first, then other bad
        ones, then the fragment's own bookie (a bookie being decommissioned still serves reads,
        and with Wq = 1 it holds the only copy)."""
        segment = view.ensemble_for(entry_id)
        replicas = [segment[p] for p in write_set(entry_id, len(segment), view.write_quorum)]
        replicas.sort(key=lambda b: (b == lost, b in bad))
        answers: list[str] = []
        for bookie in replicas:
            try:
                response = await self._bk.pool.client(bookie).read_entry(ledger_id, entry_id)
            except BookieUnavailable as exc:
                answers.append(f"{bookie}: {exc}")
                continue
            if response.status != bookie_pb2.OK:
                answers.append(f"{bookie}: {bookie_pb2.Status.Name(response.status)}")
                continue
            try:
                entry_from_response(ledger_id, entry_id, response, bookie)  # checks the digest
            except DigestMismatch as exc:
                answers.append(f"{bookie}: {exc}")
                continue
            return response.entry
        raise ReplicationFailed(
            ledger_id, f"no replica returned entry {entry_id}: {'; '.join(answers) or 'none'}"
        )

    async def _write(
        self, target: BookieId, view: LedgerMetadataView, entry: bookie_pb2.Entry
    ) -> None:
        """Write ``entry`` unchanged to ``target`` as a recovery add; wait until durable."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[int | BaseException] = loop.create_future()
        add = AddRequest(
            ledger_id=entry.ledger_id,
            entry_id=entry.entry_id,
            lac=entry.last_add_confirmed,
            payload=entry.payload,
            digest=entry.digest,
            master_key=view.master_key,
            recovery=True,
        )
        self._bk.pool.client(target).send_add(add, _resolver(done))
        result = await asyncio.wait_for(done, self._bk.config.add_timeout_s * 2)
        if isinstance(result, BaseException):
            raise ReplicationFailed(entry.ledger_id, f"write to {target} failed: {result}")
        if result != bookie_pb2.OK:
            status = bookie_pb2.Status.Name(bookie_pb2.Status.ValueType(result))
            raise ReplicationFailed(
                entry.ledger_id, f"{target} refused entry {entry.entry_id}: {status}"
            )

    async def _swap(
        self,
        ledger_id: LedgerId,
        meta: VersionedLedgerMetadata,
        fragment: Fragment,
        target: BookieId,
    ) -> VersionedLedgerMetadata:
        """CAS the metadata: ``target`` instead of the fragment's bookie in its segment."""
        while True:
            segment = next((b for f, b in meta.metadata.ensembles if f == fragment.first), None)
            if segment is None or fragment.bookie not in segment:
                return meta  # someone else (the writer, another round) already replaced it
            if target in segment:
                raise ReplicationFailed(ledger_id, f"{target} joined the segment meanwhile")
            changed = meta.metadata.with_bookie_replaced(fragment.first, fragment.bookie, target)
            try:
                return await self._bk.manager.write(meta, changed)
            except BadVersion:
                meta = await self._bk.manager.read(ledger_id)


def _resolver(
    future: asyncio.Future[int | BaseException],
) -> Callable[[int | BaseException], None]:
    def resolve(result: int | BaseException) -> None:
        if not future.done():
            future.set_result(result)

    return resolve
