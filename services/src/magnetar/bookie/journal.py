"""The bookie's journal: the write-ahead log's writer thread, group commit and checkpoints.

The bytes on disk are :mod:`magnetar.bookie.journal_record`'s (records, frames, the scan) and
:mod:`magnetar.bookie.journal_replay`'s (segment files, the log mark, replay on open); this
module writes them. A :class:`Journal` replays what lies after the log mark into its
:class:`JournalSink` (ledger storage), starts a fresh segment, then appends records in groups.

Invariants:

* An :meth:`Journal.append` completes only after its record is on stable storage (written
  through an ``O_DSYNC`` descriptor, or written and fdatasync'ed; neither when ``sync`` is
  off) and applied to the :class:`JournalSink` (ledger storage). So a record whose
  append completed survives ``kill -9`` and is readable at once.
* Records are written, synced and applied in the order they were enqueued.
* The queue between the loop and the writer is bounded in count and bytes
  (``queue_records``, ``queue_bytes``); a caller over the bound waits, in call order.
* After replay on open the sink is flushed, the mark moves past every replayed record, and a
  fresh segment is started.
* A segment is deleted only once the log mark lies in a later segment.

Concurrency: appenders on the event loop hand records to one writer thread through a
thread-safe queue bounded (on the loop side) in count and bytes. The thread takes everything
queued as one group, frames it with one call (records are encoded and checksummed there, not
on the loop: for big payloads ``crc32c`` runs without the GIL), writes it durably (one ``write``
to an ``O_DSYNC`` segment, or a write and one ``fdatasync``; big payloads with ``writev``, never
copied into one buffer) and applies it to the sink, then
posts the outcome back to the loop and at once takes the next group: the disk never waits for
the loop to get round to starting a write (what that wait cost: docs/benchmarks.md, broker
round 4, "Journal writer thread"; BookKeeper's journal thread works the same way). Completions
posted while the loop is busy are delivered together by one callback. Appenders await a future
per enqueued unit, or (:meth:`Journal.enqueue_callback_nowait`) are called back inside that
delivery: a group's completions then reach the ledger client, the managed ledger and the
receipts in that one loop callback, with no future and no scheduled callback per unit.
:meth:`Journal.checkpoint` runs on the loop (its flush in the default executor) concurrently with
writes. Call everything but the writer thread from the loop that opened the journal: the bookie
core (:mod:`magnetar.bookie.bookie`) does.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from magnetar.bookie.block_writes import BLOCK, BlockWriter, open_direct
from magnetar.bookie.bookie_stats import JournalStats
from magnetar.bookie.errors import JournalClosed, JournalFailed
from magnetar.bookie.fileio import (
    REMOVE_PAUSE_S,
    drop_cached_range,
    fsync_dir,
    page_floor,
    remove_gradually,
    write_all,
)
from magnetar.bookie.journal_record import (
    JournalRecord,
    JournalSink,
    frame_records,
    framed_size,
)
from magnetar.bookie.journal_replay import (
    JournalPosition,
    list_segments,
    replay,
    segment_path,
    write_mark,
)
from magnetar.telemetry import get_logger

log = get_logger(__name__)


@dataclass(frozen=True, slots=True)
class JournalConfig:
    sync: bool = True
    segment_bytes: int = 64 * 1024 * 1024
    max_group_bytes: int = 4 * 1024 * 1024
    max_group_records: int = 4096
    # BookKeeper's journalMaxGroupWaitMSec (Pulsar's bookkeeper.conf sets 1): the writer waits
    # this long after a group's first record before writing it, so fewer, bigger groups are
    # synced under load (what it saved: docs/benchmarks.md, broker round 4, "Group wait"); it
    # adds up to this much to an acknowledgement at low rates.
    max_group_wait_ms: float = 1.0
    queue_records: int = 16_384
    queue_bytes: int = 64 * 1024 * 1024
    # With sync on: write each group through an O_DSYNC descriptor (one system call) instead
    # of write + fdatasync (two). The same guarantee (Journal._open_segment); off: the old way.
    dsync_writes: bool = True
    # With sync and dsync_writes on: open segments O_DIRECT as well, where the filesystem
    # allows it (not tmpfs), and write whole blocks from an aligned buffer, the last partial
    # block rewritten (magnetar.bookie.block_writes): no page cache pages to fill, write back
    # and drop; the segment's bytes are the same (docs/storage.md, "The journal's write").
    direct_writes: bool = True
    # With sync on: keep the segment zero-filled (written and synced) up to this many bytes
    # ahead of its end, a chunk at a time, so that a group's write overwrites blocks the file
    # already has: its sync then carries no metadata (no new size, no block allocation, so no
    # filesystem journal commit), which on ext4 halves the sync (docs/benchmarks.md, "The
    # journal's preallocated segment"). 0: append only. Only while groups are small
    # (``prealloc_max_group_bytes``): under a heavy load each sync covers so many records that
    # writing every byte twice would cost more than it saves.
    prealloc_bytes: int = 256 * 1024
    prealloc_max_group_bytes: int = 64 * 1024
    # With sync on: drop the segment's synced pages from the page cache, a MiB at a time behind
    # the last record (BookKeeper's journalRemovePagesFromCache): the journal is read back only
    # by a replay, and a page cache that keeps growing into memory the machine has not touched
    # yet costs ten times the copy per byte written on a VM (docs/benchmarks.md, "The journal's
    # pages"); dropped pages are reused at once.
    remove_pages_from_cache: bool = True
    # Whether the process wiring exports the per-group stage recorders of JournalStats
    # (queue_wait, apply_latency, handback_latency) as histograms; the journal records into
    # whatever recorders are in place either way (by default they discard).
    stage_metrics: bool = False


# The journal drops its synced pages from the page cache at least this many bytes at a time.
_DROP_PAGES_BYTES = 1 << 20

# Told the outcome of an enqueued unit on the loop, inside the journal's delivery: None once
# durable and applied, else the error (JournalClosed, JournalFailed).
DurableCallback = Callable[[BaseException | None], None]


@dataclass(slots=True)
class _Pending:
    records: Sequence[JournalRecord]
    size: int  # framed bytes
    callback: DurableCallback  # the unit's outcome (a future's unit: _settle)
    enqueued: float  # time.perf_counter() at the hand-off (the group's queue-wait stage)
    # Each record's payload checksum where the caller knows it (-1 where not; empty: none):
    # frame_records then reads no payload it covers.
    payload_crcs: Sequence[int] = ()


def _known_crcs(group: Sequence[_Pending]) -> list[int]:
    """The payload checksums the group's units brought, parallel to its records (empty if
    none brought any)."""
    if not any(item.payload_crcs for item in group):
        return []
    known: list[int] = []
    for item in group:
        known += item.payload_crcs or [-1] * len(item.records)
    return known


def _settle(future: asyncio.Future[None], error: BaseException | None) -> None:
    """The callback of a unit enqueued for a future: settle it (unless cancelled)."""
    if not future.done():
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)


class _Written(NamedTuple):
    """The writer thread's outcome for one group, posted to the loop."""

    group: list[_Pending]
    size: int  # framed bytes of the group
    position: JournalPosition | None  # the journal's end after the group (None: not written)
    rolled: bool
    error: BaseException | None  # JournalClosed: dropped at close; anything else: I/O failure
    posted: float  # time.perf_counter() when the writer posted it (the hand-back stage)


class Journal:
    """An open journal; see the module docstring. Build with :meth:`open`."""

    def __init__(self, directory: Path, sink: JournalSink, config: JournalConfig) -> None:
        self._dir = directory
        self._sink = sink
        self._config = config
        self._handoff: queue.SimpleQueue[_Pending | None] = queue.SimpleQueue()  # None: stop
        self._written: deque[_Written] = deque()  # outcomes the loop has not delivered yet
        self._delivery_scheduled = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._dropping = False  # set at close after the drain timeout: write nothing more
        self._queued_items = 0  # enqueued units not yet delivered back (loop side)
        self._queued_bytes = 0
        self._blocked = 0  # enqueue_many callers waiting for room
        self._enqueue_order = asyncio.Lock()  # FIFO among callers waiting for room
        self._space = asyncio.Event()
        self._space.set()
        self._idle = asyncio.Event()  # nothing queued or being written
        self._idle.set()
        self._segment = 0
        self._fd = -1
        # Sync each group by writing it through an O_DSYNC descriptor (see _open_segment).
        self._dsync = config.sync and config.dsync_writes and hasattr(os, "O_DSYNC")
        self._offset = 0
        # The segment's zero-filled end (writer thread): bytes from _offset to here were written
        # as zeros and synced, so a group that fits overwrites them (see _prefill_ahead).
        self._allocated = 0
        self._prefill = config.sync and config.prealloc_bytes > 0
        self._last_group_bytes = 0
        self._zeros = bytes(config.prealloc_bytes) if self._prefill else b""
        # Where the segment's pages have been dropped from the page cache up to (writer thread).
        self._uncached = 0
        # Direct (O_DIRECT) writes through the block writer (see _open_segment); off for good
        # at the first segment the filesystem refuses it for.
        self._blocks: BlockWriter | None = None
        if self._dsync and config.direct_writes:
            self._blocks = BlockWriter(config.max_group_bytes, config.prealloc_bytes)
        # Pages to drop exist only with buffered writes (set again where direct ones stop).
        self._drop_pages = self._buffered_drops()
        self._applied = JournalPosition(0, 0)
        self._failure: BaseException | None = None
        self._closing = False
        # Set at close: a checkpoint's gradual deletion of old segments stops at its next step
        # (the next open deletes what is left), so a stop never waits on it.
        self._stopping = threading.Event()
        self._checkpoint_lock = asyncio.Lock()
        self.rolled = asyncio.Event()
        """Set when a segment was rolled over; the owner may checkpoint then."""
        self.stats = JournalStats()
        """Written by the writer thread only (see :mod:`magnetar.bookie.bookie_stats`)."""

    @classmethod
    async def open(
        cls, directory: Path, sink: JournalSink, config: JournalConfig | None = None
    ) -> Journal:
        """Replay what is after the log mark into ``sink``, then start a fresh segment."""
        journal = cls(directory, sink, config or JournalConfig())
        await asyncio.to_thread(journal._recover)
        journal._loop = asyncio.get_running_loop()
        journal._thread = threading.Thread(
            target=journal._run_writer, name="journal-writer", daemon=True
        )
        journal._thread.start()
        return journal

    def _recover(self) -> None:
        self._dir.mkdir(parents=True, exist_ok=True)
        replayed, last = replay(self._dir, self._sink)
        self._sink.flush()
        self._segment = last + 1
        write_mark(self._dir, JournalPosition(self._segment, 0))
        self._delete_before(self._segment, gradually=False)
        self._open_segment()
        self._applied = JournalPosition(self._segment, 0)
        log.info("journal_opened", directory=str(self._dir), replayed=replayed, segment=last + 1)

    def _open_segment(self) -> None:
        """Open (create) the current segment for appends. With sync on it is opened
        ``O_DSYNC`` where the platform has it: each ``write`` then returns only once its data,
        and the metadata needed to read it back (the file's new size and blocks when it grows
        the file), are on stable storage, as after ``write`` plus
        ``fdatasync`` (POSIX synchronized I/O data integrity completion), in one system call,
        so the writer thread releases and retakes the GIL once per group instead of twice.
        The segment's directory entry is made durable here, before any record is written.

        Records are written at the descriptor's position (no ``O_APPEND``): the file may
        extend past the last record with zeros the writer put there ahead of time
        (:meth:`_prefill_ahead`), which the scan reads as the end of the segment."""
        path = segment_path(self._dir, self._segment)
        flags = os.O_WRONLY | os.O_CREAT
        if self._dsync:
            flags |= os.O_DSYNC
        if self._blocks is None:
            self._fd = os.open(path, flags, 0o644)
        else:
            self._fd, direct = open_direct(path, flags)
            if not direct:
                log.info("journal_direct_writes_unsupported", directory=str(self._dir))
                self._blocks.close()
                self._blocks = None
                self._drop_pages = self._buffered_drops()
        self._offset = os.lseek(self._fd, 0, os.SEEK_END)
        if self._blocks is not None:
            self._blocks.start(path, self._offset)
        self._allocated = self._offset
        self._uncached = 0
        fsync_dir(self._dir)

    def _delete_before(self, segment: int, *, gradually: bool = True) -> None:
        """Delete the segments before ``segment``. ``gradually`` (while the journal runs):
        blocking, shrinking each a step at a time (see :func:`remove_gradually`), given up once
        the journal is closing; the pause between steps is divided by the number of segments
        waiting, so that the whole backlog goes in about the time one segment takes (about
        0.8 s per 64 MiB) and deletion keeps pace with the journal at any write rate (with a
        fixed pause it managed about 80 MB/s, and under a faster load the segments piled up).
        Not gradually (on open, before the writer starts, when no fdatasync of ours can
        stall): one unlink each, so a start after a stop that left segments behind does not
        pay a second per segment either."""
        old = [number for number in list_segments(self._dir) if number < segment]
        pause_s = REMOVE_PAUSE_S / max(1, len(old))
        for number in old:
            path = segment_path(self._dir, number)
            if not gradually:
                path.unlink(missing_ok=True)
            elif not remove_gradually(path, pause_s=pause_s, stop=self._stopping):
                return

    @property
    def directory(self) -> Path:
        return self._dir

    @property
    def failed(self) -> bool:
        return self._failure is not None

    async def enqueue(self, record: JournalRecord) -> asyncio.Future[None]:
        """Queue ``record`` (waiting while the queue is full); return its durability future.

        Call order is write order. The future fails with :class:`JournalFailed` on I/O error.
        """
        return await self.enqueue_many((record,))

    def enqueue_many_nowait(self, records: Sequence[JournalRecord]) -> asyncio.Future[None] | None:
        """:meth:`enqueue_many` without a coroutine: the future, or None (nothing queued) when
        it would have to wait for room or another caller is waiting for room (call order is
        write order). Raises like :meth:`enqueue_many`."""
        self._check_open()
        size = framed_size(records)
        if self._blocked or not self._has_room(size):
            return None
        return self._hand_off_future(records, size)

    async def enqueue_many(self, records: Sequence[JournalRecord]) -> asyncio.Future[None]:
        """Queue ``records`` as one unit in order; one future for all of them.

        A batch from the add stream costs one queue slot and one future however many entries it
        carries, which keeps the per-entry work on the event loop small.
        """
        future = self.enqueue_many_nowait(records)
        if future is not None:
            return future
        size = await self._wait_for_room(records)
        return self._hand_off_future(records, size)

    def enqueue_callback_nowait(
        self,
        records: Sequence[JournalRecord],
        callback: DurableCallback,
        payload_crcs: Sequence[int] = (),
    ) -> bool:
        """:meth:`enqueue_many_nowait` with a callback instead of a future: False (nothing
        queued) when it would have to wait for room. ``callback(None)`` (or ``callback(error)``)
        runs on the loop inside the delivery of the unit's group, synchronously and in write
        order, so completions reach the caller without a loop iteration and a scheduled
        callback per unit; it must be quick and should not raise (a raise is logged).
        ``payload_crcs`` (parallel to ``records``, or empty): ``crc32c(record.payload)`` where
        the caller knows it for certain, else -1; a wrong one makes its record unreadable."""
        self._check_open()
        size = framed_size(records)
        if self._blocked or not self._has_room(size):
            return False
        self._hand_off(records, size, callback, payload_crcs)
        return True

    async def enqueue_callback(
        self,
        records: Sequence[JournalRecord],
        callback: DurableCallback,
        payload_crcs: Sequence[int] = (),
    ) -> None:
        """:meth:`enqueue_callback_nowait`, waiting (in call order) while the queue is full."""
        if self.enqueue_callback_nowait(records, callback, payload_crcs):
            return
        size = await self._wait_for_room(records)
        self._hand_off(records, size, callback, payload_crcs)

    async def _wait_for_room(self, records: Sequence[JournalRecord]) -> int:
        """Wait, after earlier waiters, until ``records`` fit; their framed size. The caller
        hands them off at once (nothing may run in between)."""
        self._blocked += 1
        try:
            async with self._enqueue_order:
                size = framed_size(records)
                while not self._has_room(size):
                    self._space.clear()
                    await self._space.wait()
                    self._check_open()
                return size
        finally:
            self._blocked -= 1

    def _check_open(self) -> None:
        if self._closing:
            raise JournalClosed("the journal is closing")
        if self._failure is not None:
            raise JournalFailed("the journal failed earlier") from self._failure

    def _has_room(self, size: int) -> bool:
        queued = self._queued_bytes
        return self._queued_items < self._config.queue_records and (
            queued == 0 or queued + size <= self._config.queue_bytes
        )

    def _hand_off(
        self,
        records: Sequence[JournalRecord],
        size: int,
        callback: DurableCallback,
        payload_crcs: Sequence[int] = (),
    ) -> None:
        self._queued_items += 1
        self._queued_bytes += size
        self._idle.clear()
        self._handoff.put(_Pending(records, size, callback, time.perf_counter(), payload_crcs))

    def _hand_off_future(self, records: Sequence[JournalRecord], size: int) -> asyncio.Future[None]:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._hand_off(records, size, functools.partial(_settle, future))
        return future

    async def append(self, record: JournalRecord) -> None:
        """Queue ``record`` and wait until it is durable and applied."""
        await (await self.enqueue(record))

    # -- the writer thread ------------------------------------------------------------------

    def _run_writer(self) -> None:
        """Thread: wait for a record, give the group ``max_group_wait_ms`` to grow, take
        everything queued as one group (bounded), write it, post the outcome; until the stop
        sentinel. After a write failure nothing more is written: later groups
        are posted back failed with the same error."""
        group_wait_s = self._config.max_group_wait_ms / 1000
        failure: BaseException | None = None
        stop = False
        try:
            while not stop:
                first = self._handoff.get()
                if first is None:
                    return
                # Let the group grow (GIL released meanwhile); the zero-fill ahead, when one
                # is due, is done in that time.
                waited = self._prefill_ahead()
                if waited < group_wait_s:
                    time.sleep(group_wait_s - waited)
                group, size, stop = self._take_group(first)
                if self._dropping:
                    self._post(group, size, None, False, JournalClosed("closed"))
                    continue
                if failure is None:
                    try:
                        position, rolled = self._write_group(group)
                    except Exception as exc:  # an I/O error: reported to every appender
                        failure = exc
                    else:
                        self._post(group, size, position, rolled, None)
                        continue
                self._post(group, size, None, False, failure)
        finally:
            self._close_fd()

    def _prefill_ahead(self) -> float:
        """Thread: zero-fill the next ``prealloc_bytes`` of the segment past its end when less
        than that is left and the last group was small; the seconds it took (0 if none).

        The zeros go through the ``O_DSYNC`` descriptor at an explicit offset (the write
        position stays at the segment's end), so once this returns they are on disk with the
        file's new size, and a record written over them later needs no metadata synced. Only
        this thread writes the segment, so nothing can be written where the zeros go. A failed
        fill (the disk is full, say) is logged and fills stop for this journal; the records
        keep going out by appending, which reports any real failure itself."""
        config = self._config
        if (
            not self._prefill
            or self._last_group_bytes > config.prealloc_max_group_bytes
            or self._allocated - self._offset >= config.prealloc_bytes
            or self._offset >= config.segment_bytes
        ):
            return 0.0
        started = time.perf_counter()
        at = max(self._allocated, self._offset)
        zeros: bytes | memoryview = self._zeros
        if self._blocks is not None:  # whole blocks from the next one (this one's rest: zeros)
            at = -(-at // BLOCK) * BLOCK
            zeros = self._blocks.zeros(-(-len(self._zeros) // BLOCK) * BLOCK)
        size = len(zeros)
        try:
            if os.pwrite(self._fd, zeros, at) != size:
                raise OSError("short write of the zero-fill")
            if not self._dsync:
                os.fdatasync(self._fd)
        except OSError as exc:
            self._prefill = False
            log.warning("journal_prefill_failed", directory=str(self._dir), error=repr(exc))
            return time.perf_counter() - started
        self._allocated = at + size
        self.stats.prefilled_bytes += size
        return time.perf_counter() - started

    def _take_group(self, first: _Pending) -> tuple[list[_Pending], int, bool]:
        """Thread: ``first`` and what is queued behind it, within the group bounds; the group,
        its framed bytes, and whether the stop sentinel was met."""
        config = self._config
        group = [first]
        size = first.size
        while size < config.max_group_bytes and len(group) < config.max_group_records:
            try:
                item = self._handoff.get_nowait()
            except queue.Empty:
                break
            if item is None:
                return group, size, True
            group.append(item)
            size += item.size
        return group, size, False

    def _post(
        self,
        group: list[_Pending],
        size: int,
        position: JournalPosition | None,
        rolled: bool,
        error: BaseException | None,
    ) -> None:
        """Thread: queue an outcome; wake the loop unless a delivery is already due."""
        self._written.append(_Written(group, size, position, rolled, error, time.perf_counter()))
        if self._delivery_scheduled:
            return
        self._delivery_scheduled = True
        assert self._loop is not None
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
            self._loop.call_soon_threadsafe(self._deliver)

    def _deliver(self) -> None:
        """Loop: tell every posted group's units their outcome, in write order. The flag is cleared
        before draining, so an outcome posted meanwhile is either drained now or scheduled
        anew (a delivery may then find nothing left: harmless)."""
        self._delivery_scheduled = False
        written = self._written
        handback = self.stats.handback_latency
        while written:
            group, size, position, rolled, error, posted = written.popleft()
            handback.record(time.perf_counter() - posted)
            if error is None:
                assert position is not None
                self._applied = position
                if rolled:
                    self.rolled.set()
                for item in group:
                    self._call_back(item, None)
            else:
                if isinstance(error, JournalClosed):
                    failed: Exception = JournalClosed("the journal was closed")
                else:
                    if self._failure is None:
                        log.error(
                            "journal_write_failed", directory=str(self._dir), error=repr(error)
                        )
                        self._failure = error
                    failed = JournalFailed(f"journal write failed: {error!r}")
                for item in group:
                    self._call_back(item, failed)
            self._queued_items -= len(group)
            self._queued_bytes -= size
        self._space.set()
        if self._queued_items == 0:
            self._idle.set()

    def _call_back(self, item: _Pending, error: BaseException | None) -> None:
        """Loop: tell a unit its outcome; a callback's own failure must not stop the delivery
        of the rest (nor the accounting after it)."""
        try:
            item.callback(error)
        except Exception:
            log.exception("journal_callback_failed", directory=str(self._dir))

    def _write_group(self, group: Sequence[_Pending]) -> tuple[JournalPosition, bool]:
        """Thread: frame and write the group durably (see :meth:`_open_segment`: with sync on,
        one ``O_DSYNC`` write returns once the group is on stable storage), then apply it to
        the sink; maybe roll over."""
        stats = self.stats
        started = time.perf_counter()
        stats.queue_wait.record(started - group[0].enqueued)
        known: Sequence[int]
        if len(group) == 1:
            records = group[0].records
            known = group[0].payload_crcs
        else:
            records = [record for item in group for record in item.records]
            known = _known_crcs(group)
        parts, size, payload_crcs = frame_records(records, known)
        start_write = time.perf_counter()
        if self._blocks is None:
            written = write_all(self._fd, parts, size)
        else:
            reached = self._blocks.append(self._fd, self._offset, parts, size)
            self._allocated = max(self._allocated, reached)  # the zeros after: cut at close
            written = size
        self._offset += written
        self._last_group_bytes = written
        if self._config.sync and not self._dsync:
            os.fdatasync(self._fd)
        synced = time.perf_counter()
        if self._drop_pages and self._offset - self._uncached >= _DROP_PAGES_BYTES:
            self._drop_synced_pages(page_floor(self._offset))
        stats.sync_latency.record(synced - start_write)
        stats.syncs += 1
        stats.written_bytes += written
        self._sink.apply(records, payload_crcs)
        stats.apply_latency.record(time.perf_counter() - synced)
        position = JournalPosition(self._segment, self._offset)
        rolled = False
        if self._offset >= self._config.segment_bytes:
            self._cut_prefill()
            if self._drop_pages:
                self._drop_synced_pages(None)  # to the end: every byte of it is synced
            os.close(self._fd)
            self._segment += 1
            self._open_segment()
            rolled = True
        return position, rolled

    async def checkpoint(self) -> JournalPosition:
        """Flush the sink, move the log mark to what it holds, delete older segments (not
        once the journal is closing: the next open deletes them, at once)."""
        async with self._checkpoint_lock:
            mark = self._applied
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(None, self._sink.flush)
            await loop.run_in_executor(None, write_mark, self._dir, mark)
            if not self._stopping.is_set():
                await loop.run_in_executor(None, self._delete_before, mark.segment)
            log.debug("journal_checkpoint", segment=mark.segment, offset=mark.offset)
            return mark

    async def close(self, drain_timeout_s: float = 10.0) -> None:
        """Refuse new records, wait (bounded) for queued ones to be written, stop the writer.
        What the writer has not taken by the timeout is dropped: its appenders get
        :class:`JournalClosed`."""
        self._closing = True
        self._stopping.set()
        thread = self._thread
        if thread is not None:
            if self._failure is None:
                try:
                    async with asyncio.timeout(drain_timeout_s):
                        await self._idle.wait()
                except TimeoutError:
                    log.warning("journal_drain_timeout", pending=self._queued_items)
            self._dropping = True
            self._handoff.put(None)
            await asyncio.to_thread(thread.join)
            self._thread = None
            self._deliver()  # what the writer posted last, before its call reaches the loop
            # Segments a checkpoint has not deleted yet (the next open unlinks them): more
            # than a few means deletion fell behind the load.
            segments = await asyncio.to_thread(list_segments, self._dir)
            log.info("journal_closed", directory=str(self._dir), segments=len(segments))
        self._space.set()

    def _buffered_drops(self) -> bool:
        """Whether the writer drops synced pages: with sync on, the setting on, and the
        segment written through the page cache (a direct write leaves none there)."""
        return self._config.sync and self._config.remove_pages_from_cache and self._blocks is None

    def _drop_synced_pages(self, end: int | None) -> None:
        """Thread: drop the segment's pages from ``_uncached`` to ``end`` (page aligned; None:
        to the end of the file) from the page cache. Only synced (clean) pages: what is before
        the last record's page; the page the next group continues and the zeros ahead stay
        cached, so no later write has to read a page back. Advice only: a failure changes
        nothing."""
        length = 0 if end is None else end - self._uncached  # 0: to the end of the file
        with contextlib.suppress(OSError):
            drop_cached_range(self._fd, self._uncached, length)
        self._uncached = self._offset if end is None else end

    def _cut_prefill(self) -> None:
        """Thread: drop the zeros past the last record from a segment being closed (the scan
        would stop at them anyway; this keeps a closed segment's size its records' size)."""
        if self._allocated > self._offset:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self._offset)
            self._allocated = self._offset

    def _close_fd(self) -> None:
        if self._fd < 0:
            return
        self._cut_prefill()
        try:
            if self._config.sync:
                os.fdatasync(self._fd)
        except OSError as exc:
            log.warning("journal_close_sync_failed", directory=str(self._dir), error=repr(exc))
        finally:
            os.close(self._fd)
            self._fd = -1
