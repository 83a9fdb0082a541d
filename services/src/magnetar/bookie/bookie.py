"""The bookie core: BookKeeper's add / read / fence / delete semantics over journal + storage.

Rules it enforces (as BookKeeper does):

* The first add (or fence) of a ledger fixes its master key; later adds and fences with another
  key get ``UNAUTHORIZED``.
* Once fenced, a ledger refuses every add that is not a recovery add (``FENCED``). The fence is
  journalled, so it survives a restart; it is effective in memory at once, before the fsync.
* A read-only bookie (``--read-only``, or free disk below the threshold) refuses adds with
  ``READ_ONLY``; reads, fences and deletes still work. It becomes writable again when disk
  frees up past the threshold plus a margin.
* A deleted ledger leaves a tombstone: adds and reads get ``NO_SUCH_LEDGER``; a background GC
  deletes its entries from storage, then removes or compacts the entry logs they leave mostly
  empty.
* An add is acknowledged only when its journal record is fsynced and applied to storage, so
  every acknowledged entry is readable at once and survives ``kill -9``.

Beside it: its requests and results (:mod:`magnetar.bookie.bookie_protocol`), its configuration
(:mod:`magnetar.bookie.config`), the free-space rules of read-only mode
(:mod:`magnetar.bookie.disk_monitor`), the journal and ledger storage it drives.

Concurrency: every method runs on the event loop; the callers are the gRPC servicer and
:mod:`magnetar.bookie.local` (which also serves the standalone's in-process path), and whoever
runs the bookie (the bookie server, the standalone: open, mode listener, close). In-memory
ledger state (``_LedgerState``) is touched only there. Storage reads run in the default
executor; journal writes in the journal's thread. Background loops (checkpoint, GC, disk check)
are tasks owned by the bookie, started by :meth:`Bookie.open` and cancelled by
:meth:`Bookie.close`.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from magnetar.bookie.bookie_protocol import (
    AddFields,
    AddOp,
    LacResult,
    LedgerListing,
    PendingAdds,
    ReadResult,
    Status,
)
from magnetar.bookie.bookie_stats import BookieStats
from magnetar.bookie.config import BookieConfig
from magnetar.bookie.directories import ensure_writable
from magnetar.bookie.disk_monitor import DiskMonitor, DiskUsage, disk_usage
from magnetar.bookie.errors import BookieClosed, BookieError, StorageCorrupt
from magnetar.bookie.journal import Journal
from magnetar.bookie.journal_record import JournalRecord, RecordKind
from magnetar.bookie.ledger_storage import LedgerStorage, ListedEntry, StoredEntry
from magnetar.tasks import TaskSet
from magnetar.telemetry import get_logger

log = get_logger(__name__)


# A JournalRecord from its fields without the NamedTuple's Python-level ``__new__`` (one per
# add on the loop); the same value as ``JournalRecord(*fields)``.
_new_record: Callable[[tuple[RecordKind, int, int, int, int, bytes, bytes]], JournalRecord] = (
    functools.partial(tuple.__new__, JournalRecord)
)


@dataclass(slots=True)
class _LedgerState:
    master_key: bytes
    fenced: bool = False
    deleted: bool = False
    collected: bool = False
    lac: int = -1
    last_entry_id: int = -1


class Bookie:
    """One bookie's storage and rules. Build with :meth:`open`; end with :meth:`close`."""

    def __init__(self, config: BookieConfig, storage: LedgerStorage, journal: Journal) -> None:
        self.config = config
        self._storage = storage
        self._journal = journal
        self.stats = BookieStats(journal.stats)
        self._ledgers: dict[int, _LedgerState] = {}
        self._disk = DiskMonitor(
            config.min_free_disk_fraction,
            config.writable_margin_fraction,
            announced=config.force_read_only,
        )
        self._closed = False
        self._decommissioned = False
        self._gc_wake = asyncio.Event()
        self._tasks = TaskSet("bookie-background")
        self.disk_usage_probe: Callable[[Path], DiskUsage] = disk_usage
        """Replaceable in tests to simulate a full disk."""

    @classmethod
    async def open(cls, config: BookieConfig) -> Bookie:
        """Check that its dirs are writable (:class:`StorageUnavailable` if not), open storage,
        replay the journal into it, load ledger state, start background loops."""
        loop = asyncio.get_running_loop()
        for what, directory in (
            ("data", config.data_dir),
            ("journal", config.journal_dir),
            ("ledger", config.ledger_dir),
        ):
            await loop.run_in_executor(None, ensure_writable, directory, what)
        open_storage = functools.partial(
            LedgerStorage,
            config.ledger_dir,
            entry_log_bytes=config.entry_log_size_limit,
            entry_log_page_cache_bytes=config.entry_log_page_cache_bytes,
            entry_log_direct_writes=config.entry_log_direct_writes,
        )
        storage = await loop.run_in_executor(None, open_storage)
        try:
            journal = await Journal.open(config.journal_dir, storage, config.journal)
        except BaseException:
            await loop.run_in_executor(None, storage.close)
            raise
        bookie = cls(config, storage, journal)
        await loop.run_in_executor(None, bookie._load_state)
        await bookie.check_disk()
        bookie._tasks.spawn(bookie._checkpoint_loop(), name="bookie-checkpoint")
        bookie._tasks.spawn(bookie._gc_loop(), name="bookie-gc")
        bookie._tasks.spawn(bookie._disk_loop(), name="bookie-disk")
        log.info("bookie_opened", data_dir=str(config.data_dir), ledgers=len(bookie._ledgers))
        return bookie

    def _load_state(self) -> None:
        """Executor: rebuild in-memory ledger state from storage."""
        for ledger_id, meta in self._storage.metas().items():
            last = -1 if meta.deleted else self._storage.last_entry_id(ledger_id)
            self._ledgers[ledger_id] = _LedgerState(
                master_key=meta.master_key,
                fenced=meta.fenced,
                deleted=meta.deleted,
                collected=meta.collected,
                lac=meta.lac,
                last_entry_id=last,
            )

    # -- mode ------------------------------------------------------------------------------

    @property
    def read_only(self) -> bool:
        """Refusing adds: forced, decommissioned, disk low, or the journal failed (durability
        not promised)."""
        return (
            self.config.force_read_only
            or self._decommissioned
            or self._disk.low
            or self._journal.failed
        )

    def set_decommissioned(self, decommissioned: bool) -> None:
        """Refuse adds while being decommissioned (writers then change their ensembles away;
        reads and recovery reads go on); tell the mode listeners."""
        if decommissioned != self._decommissioned:
            self._decommissioned = decommissioned
            log.info("bookie_decommission_mode", decommissioned=decommissioned)
            self._disk.announce(self.read_only)

    @property
    def disk(self) -> DiskUsage:
        return self._disk.usage

    def add_mode_listener(self, listener: Callable[[bool], None]) -> None:
        """Call ``listener(read_only)`` on the loop whenever the mode changes."""
        self._disk.add_listener(listener)

    async def check_disk(self) -> None:
        """Measure free disk, switch read-only mode on or off (with hysteresis), tell listeners.

        The volumes of the ledger dir and of the journal dir are measured (one volume, or two
        when the journal has its own); the one with the smaller free share counts, since
        either filling up stops adds. Also announces a journal failure, which makes the
        bookie read-only for good.
        """
        loop = asyncio.get_running_loop()
        usages = [
            await loop.run_in_executor(None, self.disk_usage_probe, directory)
            for directory in (self.config.ledger_dir, self.config.journal_dir)
        ]
        usage = min(usages, key=lambda u: u.free_bytes / u.total_bytes if u.total_bytes else 1.0)
        self._disk.observe(usage)
        self._disk.announce(self.read_only)

    # -- adds ------------------------------------------------------------------------------

    def submit_adds_nowait(
        self, ops: Sequence[AddFields], payload_crcs: Sequence[int] = ()
    ) -> PendingAdds | None:
        """:meth:`submit_adds` without a coroutine, or None when the journal has no room now
        (nothing journalled; call :meth:`submit_adds`, which checks the ops again and waits).
        ``payload_crcs`` (parallel to ``ops``, or empty): ``crc32c(op.payload)`` where an
        in-process caller knows it for certain (-1 where not): the journal then reads no
        payload it covers (:meth:`Journal.enqueue_callback_nowait`).
        """
        statuses, records, known = self._accept(ops, payload_crcs)
        if not records:
            return PendingAdds(statuses, durable=False)
        pending = PendingAdds(statuses, durable=True)
        durable = self._on_durable(records, pending)
        if not self._journal.enqueue_callback_nowait(records, durable, known):
            return None
        return pending

    async def submit_adds(
        self, ops: Sequence[AddFields], payload_crcs: Sequence[int] = ()
    ) -> PendingAdds:
        """Check and journal ``ops`` in order; returns once all are queued (not yet durable).

        The accepted ops of one call go to the journal as one unit with one durability future.
        """
        pending = self.submit_adds_nowait(ops, payload_crcs)
        if pending is not None:
            return pending
        statuses, records, known = self._accept(ops, payload_crcs)
        if not records:
            return PendingAdds(statuses, durable=False)
        pending = PendingAdds(statuses, durable=True)
        await self._journal.enqueue_callback(records, self._on_durable(records, pending), known)
        return pending

    def _accept(
        self, ops: Sequence[AddFields], payload_crcs: Sequence[int] = ()
    ) -> tuple[list[Status], list[JournalRecord], list[int]]:
        """Each op's status, the journal records of the accepted ones in order, and their
        ``payload_crcs`` (empty if none were given).

        A batch is mostly runs of one ledger: an op with the ledger, master key and recovery
        flag of the one before it gets that one's status without a new check (nothing the
        check reads changes within the batch once the first op of a ledger created its
        state)."""
        if self._closed:
            raise BookieClosed("the bookie is closing")
        read_only = self.read_only  # once per batch: nothing in the loop below changes it
        statuses: list[Status] = []
        records: list[JournalRecord] = []
        check = self._check_add
        new_record = _new_record
        add_kind = RecordKind.ADD
        ok = Status.OK
        ledger_id = -1
        key = b""
        recovery = False
        status = Status.BAD_REQUEST
        for op in ops:
            if (
                op.ledger_id != ledger_id
                or op.entry_id < 0
                or op.recovery is not recovery
                or op.master_key != key
            ):
                status = check(op, read_only)
                ledger_id = op.ledger_id
                key = op.master_key
                recovery = op.recovery
            statuses.append(status)
            if status is ok:
                records.append(
                    new_record(
                        (add_kind, ledger_id, op.entry_id, op.lac, op.digest, key, op.payload)
                    )
                )
        if not payload_crcs:
            return statuses, records, []
        if len(records) == len(ops):
            return statuses, records, list(payload_crcs)
        known = [crc for crc, status in zip(payload_crcs, statuses, strict=True) if status is ok]
        return statuses, records, known

    def _on_durable(
        self, records: list[JournalRecord], pending: PendingAdds
    ) -> Callable[[BaseException | None], None]:
        """The journal's callback for ``records``: advance the ledgers, then tell ``pending``
        (so a client told OK reads the LAC it carried)."""

        def durable(error: BaseException | None) -> None:
            if error is None:
                self._adds_completed(records)
            pending.complete(error)

        return durable

    async def add(self, op: AddOp) -> Status:
        """One add, waiting until durable."""
        return (await (await self.submit_adds([op])).wait())[0]

    def _check_add(self, op: AddFields, read_only: bool) -> Status:
        if op.entry_id < 0 or op.ledger_id < 0:
            return Status.BAD_REQUEST
        if read_only:
            return Status.READ_ONLY
        state = self._ledgers.get(op.ledger_id)
        if state is None:
            self._ledgers[op.ledger_id] = _LedgerState(master_key=op.master_key)
            return Status.OK
        if state.deleted:
            return Status.NO_SUCH_LEDGER
        if state.master_key != op.master_key:
            return Status.UNAUTHORIZED
        if state.fenced and not op.recovery:
            return Status.FENCED
        return Status.OK

    def _adds_completed(self, records: Sequence[JournalRecord]) -> None:
        """The journal made ``records`` durable: advance their ledgers' last entry and LAC."""
        self.stats.entries_added += len(records)
        ledger_id = -1
        state: _LedgerState | None = None
        for record in records:
            if record.ledger_id != ledger_id:  # a batch is mostly runs of one ledger
                ledger_id = record.ledger_id
                state = self._ledgers.get(ledger_id)
            if state is not None:
                if record.entry_id > state.last_entry_id:
                    state.last_entry_id = record.entry_id
                if record.lac > state.lac:
                    state.lac = record.lac

    # -- reads -----------------------------------------------------------------------------

    async def read_entry(
        self, ledger_id: int, entry_id: int, *, fence: bool = False, master_key: bytes = b""
    ) -> ReadResult:
        """Read one entry; ``entry_id`` -1 reads the last one held. ``fence`` fences first."""
        if fence:
            fenced = await self.fence(ledger_id, master_key)
            if fenced.status is not Status.OK:
                return ReadResult(fenced.status)
        state = self._ledgers.get(ledger_id)
        if state is None or state.deleted:
            return ReadResult(Status.NO_SUCH_LEDGER)
        if entry_id == -1:
            entry_id = state.last_entry_id
            if entry_id < 0:
                return ReadResult(Status.NO_SUCH_ENTRY, lac=state.lac)
        elif entry_id < 0:
            return ReadResult(Status.BAD_REQUEST)
        loop = asyncio.get_running_loop()
        try:
            entry = await loop.run_in_executor(None, self._storage.get_entry, ledger_id, entry_id)
        except StorageCorrupt as exc:
            # An answer, not an error of the call: the reader goes to another replica at once
            # (an exception reached it as an unreachable bookie, retried until its timeout).
            log.error("entry_corrupt", ledger_id=ledger_id, entry_id=entry_id, error=str(exc))
            return ReadResult(Status.INTERNAL, lac=state.lac)
        if entry is None:
            return ReadResult(Status.NO_SUCH_ENTRY, lac=state.lac)
        self.stats.entries_read += 1
        return ReadResult(Status.OK, entry, lac=state.lac)

    async def read_range(
        self, ledger_id: int, first: int, last: int, max_bytes: int = 0
    ) -> tuple[Status, list[StoredEntry]]:
        """Entries first..last (inclusive) that the bookie holds, in order, up to max_bytes."""
        state = self._ledgers.get(ledger_id)
        if state is None or state.deleted:
            return Status.NO_SUCH_LEDGER, []
        if first > last:
            return Status.BAD_REQUEST, []
        loop = asyncio.get_running_loop()
        try:
            entries = await loop.run_in_executor(
                None, self._storage.read_range, ledger_id, first, last, max_bytes
            )
        except StorageCorrupt as exc:  # as read_entry answers it (the reader reads around it)
            log.error("entry_corrupt", ledger_id=ledger_id, first=first, error=str(exc))
            return Status.INTERNAL, []
        self.stats.entries_read += len(entries)
        return Status.OK, entries

    def read_lac(self, ledger_id: int) -> LacResult:
        state = self._ledgers.get(ledger_id)
        if state is None or state.deleted:
            return LacResult(Status.NO_SUCH_LEDGER)
        return LacResult(Status.OK, state.lac, state.last_entry_id)

    # -- fence and delete ------------------------------------------------------------------

    async def fence(self, ledger_id: int, master_key: bytes) -> LacResult:
        """Fence the ledger (creating its state if unknown), durably; return its LAC."""
        if self._closed:
            raise BookieClosed("the bookie is closing")
        state = self._ledgers.get(ledger_id)
        if state is not None and state.deleted:
            return LacResult(Status.NO_SUCH_LEDGER)
        if state is not None and state.master_key != master_key:
            return LacResult(Status.UNAUTHORIZED)
        if state is None:
            state = _LedgerState(master_key=master_key)
            self._ledgers[ledger_id] = state
        state.fenced = True
        try:
            await self._journal.append(
                JournalRecord(RecordKind.FENCE, ledger_id, master_key=master_key)
            )
        except BookieError:
            return LacResult(Status.INTERNAL)
        log.info("ledger_fenced", ledger_id=ledger_id, lac=state.lac)
        return LacResult(Status.OK, state.lac, state.last_entry_id)

    async def delete_ledger(self, ledger_id: int) -> Status:
        """Tombstone the ledger durably (idempotent); GC removes its entries later."""
        if self._closed:
            raise BookieClosed("the bookie is closing")
        state = self._ledgers.get(ledger_id)
        if state is None:
            state = _LedgerState(master_key=b"")
            self._ledgers[ledger_id] = state
        elif state.deleted:
            return Status.OK
        state.deleted = True
        state.collected = False
        try:
            await self._journal.append(JournalRecord(RecordKind.DELETE, ledger_id))
        except BookieError:
            return Status.INTERNAL
        log.info("ledger_deleted", ledger_id=ledger_id)
        self._gc_wake.set()
        return Status.OK

    # -- listing and info ------------------------------------------------------------------

    async def list_ledgers(self, include_ranges: bool = False) -> list[LedgerListing]:
        """Every live ledger the bookie holds, by id; ranges/counts read from storage."""
        loop = asyncio.get_running_loop()
        out = []
        for ledger_id in sorted(self._ledgers):
            state = self._ledgers[ledger_id]
            if state.deleted:
                continue
            ranges = await loop.run_in_executor(None, self._storage.entry_ranges, ledger_id)
            count = sum(last - first + 1 for first, last in ranges)
            out.append(
                LedgerListing(
                    ledger_id=ledger_id,
                    entry_count=count,
                    last_entry_id=ranges[-1][1] if ranges else -1,
                    fenced=state.fenced,
                    ranges=tuple(ranges) if include_ranges else (),
                )
            )
        return out

    async def list_entries(
        self, first_ledger_id: int, last_ledger_id: int, chunk_entries: int
    ) -> AsyncIterator[list[ListedEntry]]:
        """The entries held of live ledgers first..last (inclusive), in (ledger, entry) order,
        in chunks of at most ``chunk_entries`` read from the index one at a time (memory stays
        bounded by a chunk whatever the bookie holds). Entries of deleted ledgers awaiting GC
        are left out."""
        loop = asyncio.get_running_loop()
        start = (first_ledger_id, 0)
        while True:
            chunk = await loop.run_in_executor(
                None, self._storage.list_entries, start, last_ledger_id, chunk_entries
            )
            if not chunk:
                return
            live = [e for e in chunk if not self._is_deleted(e.ledger_id)]
            if live:
                yield live
            if len(chunk) < chunk_entries:
                return
            start = (chunk[-1].ledger_id, chunk[-1].entry_id + 1)

    def _is_deleted(self, ledger_id: int) -> bool:
        state = self._ledgers.get(ledger_id)
        return state is not None and state.deleted

    @property
    def ledger_count(self) -> int:
        return sum(1 for s in self._ledgers.values() if not s.deleted)

    # -- background ------------------------------------------------------------------------

    async def collect_garbage(self) -> int:
        """Remove the entries of deleted ledgers from storage, then reclaim the entry logs
        they leave (mostly) empty; return how many ledgers were collected."""
        loop = asyncio.get_running_loop()
        collected = 0
        for ledger_id, state in list(self._ledgers.items()):
            if not state.deleted or state.collected:
                continue
            if await loop.run_in_executor(None, self._storage.collect, ledger_id):
                state.collected = True
                collected += 1
                log.info("ledger_garbage_collected", ledger_id=ledger_id)
        compact = functools.partial(
            self._storage.compact,
            self.config.compaction_threshold,
            self.config.compaction_rate_by_bytes,
        )
        await loop.run_in_executor(None, compact)
        return collected

    async def checkpoint(self) -> None:
        await self._journal.checkpoint()

    async def _every(
        self,
        interval_s: float,
        wake: asyncio.Event | None,
        step: Callable[[], Awaitable[object]],
        name: str,
    ) -> None:
        while True:
            if wake is None:
                await asyncio.sleep(interval_s)
            else:
                try:
                    async with asyncio.timeout(interval_s):
                        await wake.wait()
                except TimeoutError:
                    pass
                wake.clear()
            try:
                await step()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.error("bookie_background_failed", loop=name, error=repr(exc))

    async def _checkpoint_loop(self) -> None:
        interval = self.config.checkpoint_interval_s
        await self._every(interval, self._journal.rolled, self.checkpoint, "checkpoint")

    async def _gc_loop(self) -> None:
        await self._every(self.config.gc_interval_s, self._gc_wake, self.collect_garbage, "gc")

    async def _disk_loop(self) -> None:
        await self._every(self.config.disk_check_interval_s, None, self.check_disk, "disk")

    async def close(self, drain_timeout_s: float = 10.0) -> None:
        """Stop background loops, drain the journal (bounded), checkpoint, close storage."""
        if self._closed:
            return
        self._closed = True
        await self._tasks.close()
        await self._journal.close(drain_timeout_s)
        if not self._journal.failed:
            await self._journal.checkpoint()
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, self._storage.close)
        log.info("bookie_closed", data_dir=str(self.config.data_dir))
