"""Entry logs: the bookie's entry payloads, appended to plain files outside RocksDB.

This is BookKeeper's entry logger as its DbLedgerStorage uses it: payloads go to append-only
files, RocksDB (:mod:`magnetar.bookie.ledger_storage`) keeps only an index from (ledger, entry)
to a location. Payloads in RocksDB were rewritten by every memtable flush and compaction, and
those bursts of writeback stalled the journal's fdatasync, which every acknowledgement waits
for, and the publish tail latency with it (docs/benchmarks.md, "Broker round 5").

Layout: ``<dir>/00000001.log``, ``00000002.log``, ... Each log is a sequence of records::

    length (u32) | ledger id (u64) | entry id (u64) | crc32c (u32) | payload (length bytes)

all big-endian (:mod:`magnetar.bookie.log_records`, compiled, holds the layout and frames the
journal writer's appends); the CRC covers the first three fields and the payload, so a read can
check what it got and a scan stops at a torn or zeroed tail. ``<dir>/<n>.ledgers`` is a sealed log's
summary (bytes per ledger, for GC), written once the log is synced; a log without one is
scanned at open. A log is sealed when it reaches ``roll_bytes``, and at every open: appends
always go to a log created by this process, so a torn tail is never appended to. A log being
removed is first renamed ``<n>.log.removed``; a removal cut short (the bookie stopping) leaves
that file, which the next open unlinks before anything else.

Durability: appends are not synced one by one; the journal holds every record until
:meth:`EntryLog.sync` (called by the storage's flush, before the journal's mark moves) has
fdatasync'ed them.

Direct writes (``direct_writes``, the bookie's default where the filesystem allows
``O_DIRECT``): an append is copied into the current log's write-behind buffer
(:class:`~magnetar.bookie.write_behind.WriteBehind`) and is read from there until it is in
the file; every ``writeback_bytes`` the buffer is handed to the writeback thread, which writes
it out as whole blocks while appends go on into the other one. An append waits only when both
buffers are full (the disk is behind); :meth:`sync` writes out the rest first; a sealed log is
cut to its last record, so it is the file buffered appends leave. A failed write-out fails
every later append and sync (the journal keeps its records). No page of the logs enters the
page cache on the way, so there is nothing to write back or drop (docs/storage.md, "Entry logs
written behind").

Buffered appends (``direct_writes`` off, or ``O_DIRECT`` refused): a writeback thread has the
kernel start writing the current log out every ``writeback_bytes``
(:func:`~magnetar.bookie.fileio.start_writeback`), so that there is never a big backlog of
dirty pages to write at once (RocksDB's ``bytes_per_sync``,
BookKeeper's ``flushEntrylogBytes``): the journal's slowest syncs and the publish p99 fell
with it (docs/benchmarks.md, "Broker round 5"). The same thread keeps the logs' pages in the
page cache only for the last ``page_cache_bytes`` written (reads of recent entries, a catch-up
consumer's, are served from there): older pages, long written back, are dropped
(``POSIX_FADV_DONTNEED``), so the page cache reuses the same memory instead of growing into
memory the machine has not touched (docs/storage.md, "Entry logs in the page cache"). Dropping
a page never drops data: a range is written back (and waited for) before it is dropped, and a
read of a dropped page goes to the disk.

Concurrency: appends from the storage's writer and its compaction, one at a time
(``_append_lock``, held across the moments a direct append lets ``_lock`` go), readers and
:meth:`sync` from any thread. ``_lock`` guards the current log, the write-behind buffers and
the bookkeeping (a write-out runs with it released, ``_writing`` set); ``_sync_lock``
serializes syncing and is the only place a write fd is closed, so a sync never hits a closed or
reused fd. Readers pin a log's read fd while they use it; :meth:`remove` closes it after them.
"""

from __future__ import annotations

import contextlib
import errno
import os
import struct
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import crc32c

from magnetar.bookie.block_writes import open_direct
from magnetar.bookie.errors import StorageCorrupt
from magnetar.bookie.fileio import (
    drop_cached_range,
    fsync_dir,
    page_floor,
    remove_gradually,
    replace_durably,
    start_writeback,
    write_all,
)
from magnetar.bookie.journal_record import JournalRecord
from magnetar.bookie.log_records import HEAD, frame_adds, record_crc
from magnetar.bookie.write_behind import OutBuffer, WriteBehind
from magnetar.telemetry import get_logger

log = get_logger(__name__)

_LEN = struct.Struct(">I")
_USAGE_HEAD = struct.Struct(">I")
_USAGE_ITEM = struct.Struct(">QQ")
_LOG_SUFFIX = ".log"
_USAGE_SUFFIX = ".ledgers"
_REMOVED_SUFFIX = ".removed"  # appended to a log's name when its removal starts
_SCAN_CHUNK = 4 << 20
_MAX_READ_FDS = 64
_MAX_PAYLOAD = 64 << 20  # a longer length field is a torn or corrupt header
_COALESCE_SLACK = 64 << 10  # read one span when the gaps in it add up to at most this
# The write-behind buffers' size to begin with (each of two; a bigger write grows them).
_BEHIND_BYTES = 8 << 20
# What stays in the page cache of the entry logs, behind the last byte written (0: all of it).
# Small: the dropped pages are reused for the next writes while the CPU caches still hold them,
# which made 16 KiB publish a quarter cheaper than a 128 MiB window (docs/storage.md, "Entry
# logs in the page cache"); the broker's own entry cache serves readers that keep up.
PAGE_CACHE_BYTES = 8 << 20


class EntryLocation(NamedTuple):
    """Where one entry's record starts, and its payload length."""

    log_id: int
    offset: int
    length: int


class ScannedEntry(NamedTuple):
    """A record found by :meth:`EntryLog.scan`, CRC checked; ``payload`` is a view into the
    scan's read buffer (copy it to keep it past the scan's use)."""

    ledger_id: int
    entry_id: int
    location: EntryLocation
    payload: memoryview


def _log_path(directory: Path, log_id: int) -> Path:
    return directory / f"{log_id:08d}{_LOG_SUFFIX}"


def _usage_path(directory: Path, log_id: int) -> Path:
    return directory / f"{log_id:08d}{_USAGE_SUFFIX}"


@dataclass(slots=True)
class _Reader:
    fd: int
    users: int = 0
    retired: bool = False


@dataclass(slots=True)
class _Sealed:
    """A log that takes no more appends but is not yet synced and summarized."""

    log_id: int
    fd: int


@dataclass(slots=True)
class _CachedLog:
    """A log this process wrote whose pages may still be cached (see ``_trim_page_cache``)."""

    size: int | None = None  # set at the seal; None while current (or sealed for close)
    dropped: int = 0  # bytes from its start already dropped from the page cache


@dataclass(slots=True)
class _State:
    current: int = 0
    fd: int = -1
    offset: int = 0
    sealed: list[_Sealed] = field(default_factory=list)
    usage: dict[int, dict[int, int]] = field(default_factory=dict)  # log -> ledger -> bytes
    summarized: set[int] = field(default_factory=set)  # sealed, synced, summary on disk
    written_since_kick: int = 0
    dir_dirty: bool = False


class EntryLog:
    """The entry logs in one directory; see the module docstring."""

    def __init__(
        self,
        directory: Path,
        *,
        roll_bytes: int = 256 << 20,
        writeback_bytes: int = 1 << 20,
        page_cache_bytes: int = PAGE_CACHE_BYTES,
        direct_writes: bool = False,
    ) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        # Direct writes: the current log's tail, written out behind the appends (None:
        # buffered appends, or the filesystem refused O_DIRECT). Under _lock.
        self._behind: WriteBehind | None = (
            WriteBehind(_BEHIND_BYTES) if direct_writes and hasattr(os, "O_DIRECT") else None
        )
        self._writing = False  # a thread writes the buffer handed off, outside _lock
        self._behind_error: OSError | None = None  # the write-out that failed (sticky)
        self._dir = directory
        self._roll_bytes = roll_bytes
        self._writeback_bytes = writeback_bytes
        self._page_cache_bytes = page_cache_bytes
        # Logs written by this process whose pages may still be cached. The writeback thread's,
        # under _sync_lock; entries are added and sizes set under _lock at the seal.
        self._cached: dict[int, _CachedLog] = {}
        self._lock = threading.Lock()
        self._written = threading.Condition(self._lock)  # a write-out ended
        # One append at a time, held across the moments a direct append lets _lock go (to
        # wait for a write-out, or to write out a log it seals): the journal's writer and a
        # compaction both append, and neither may slip in between another's parts.
        self._append_lock = threading.Lock()
        self._sync_lock = threading.Lock()
        self._readers: OrderedDict[int, _Reader] = OrderedDict()
        self._state = _State()
        self._closed = False
        for path in directory.glob(f"*{_LOG_SUFFIX}{_REMOVED_SUFFIX}"):
            path.unlink(missing_ok=True)  # a removal a stop cut short: finish it at once
        for log_id in self.list_logs():
            usage = self._read_usage(log_id)
            if usage is None:
                usage = self._summarize_by_scan(log_id)
            self._state.usage[log_id] = usage
            self._state.summarized.add(log_id)
        self._start_log(max(self._state.usage, default=0) + 1)
        self._kick = threading.Event()
        self._writeback = threading.Thread(
            target=self._run_writeback, name="entry-log-writeback", daemon=True
        )
        self._writeback.start()

    # -- appends --------------------------------------------------------------------------

    def append(self, entries: Sequence[tuple[int, int, bytes]]) -> list[EntryLocation]:
        """Append (ledger id, entry id, payload) records in one write; return their locations.
        Not synced: see :meth:`sync`."""
        parts: list[bytes] = []
        offsets: list[int] = []
        usage: dict[int, int] = {}
        offset = 0
        pack_head = HEAD.pack
        for ledger_id, entry_id, payload in entries:
            length = len(payload)
            checksum = record_crc(ledger_id, entry_id, payload)
            parts += (pack_head(length, ledger_id, entry_id, checksum), payload)
            offsets.append(offset)
            offset += HEAD.size + length
            usage[ledger_id] = usage.get(ledger_id, 0) + HEAD.size + length
        log_id, base = self._write(parts, offset, usage)
        return [
            EntryLocation(log_id, base + at, len(entry[2]))
            for at, entry in zip(offsets, entries, strict=True)
        ]

    def append_records(
        self, records: Sequence[JournalRecord], payload_crcs: Sequence[int] = ()
    ) -> tuple[int, int]:
        """Append the payloads of the journalled adds among ``records`` (fences and deletes
        have none) in one write, as :meth:`append` does, without building a tuple and a
        location per entry (the journal writer's path): return (log id, offset of the first
        record), or (-1, 0) when there is no add; the records lie back to back from there,
        each ``log_records.RECORD_HEAD_SIZE`` bytes of header then its payload.

        ``payload_crcs`` (parallel to ``records``, or empty): each payload's ``crc32c`` where
        the journal took it (not -1): the record's checksum is then combined from it and the
        head's, without a second pass over the payload."""
        parts, total, usage = frame_adds(records, payload_crcs)  # one compiled loop
        if not parts:
            return -1, 0
        return self._write(parts, total, usage)

    def _write(self, parts: list[bytes], total: int, added: dict[int, int]) -> tuple[int, int]:
        """Write encoded records (``total`` bytes; ``added``: bytes per ledger) to the current
        log, rolling it first if it is full; return (log id, offset of the first byte)."""
        with self._append_lock, self._lock:
            state = self._state
            if state.offset >= self._roll_bytes:
                self._seal_current()
            log_id = state.current
            offset = state.offset
            if self._behind is not None:
                self._append_behind(self._behind, parts, total, added)
                return log_id, offset
            try:
                written = write_all(state.fd, parts, total)
            except OSError:
                # Part of it may be in the file: later records go after it (O_APPEND), so the
                # offsets must follow the file, not this count.
                state.offset = os.fstat(state.fd).st_size
                raise
            state.offset += written
            usage = state.usage[log_id]
            for ledger_id, size in added.items():
                usage[ledger_id] = usage.get(ledger_id, 0) + size
            state.written_since_kick += written
            kick = state.written_since_kick >= self._writeback_bytes
            if kick:
                state.written_since_kick = 0
        if kick:
            self._kick.set()
        return log_id, offset

    def _append_behind(
        self, behind: WriteBehind, parts: list[bytes], total: int, added: dict[int, int]
    ) -> None:
        """Under ``_lock``: copy encoded records to the current log's tail buffer; hand it
        to the writeback thread once ``writeback_bytes`` are in it, or when the next write
        does not fit (waiting for the write-out before, if one is under way). After a failed
        write-out every append fails too, as buffered appends do while the disk refuses them."""
        if self._behind_error is not None:
            raise self._behind_error
        if total > behind.room() and behind.active_bytes:
            self._write_out(None)
            behind.hand_off()
            self._kick.set()
        behind.append(parts, total)
        state = self._state
        state.offset += total
        usage = state.usage[state.current]
        for ledger_id, size in added.items():
            usage[ledger_id] = usage.get(ledger_id, 0) + size
        if behind.out is None and behind.active_bytes >= self._writeback_bytes:
            behind.hand_off()
            self._kick.set()

    def _write_out(self, until: int | None) -> None:
        """Under ``_lock`` (released while the device writes): write the buffer handed off,
        or wait for the thread writing it; with ``until`` (an offset of the current log),
        then hand off and write the rest until the file holds every byte before it. Appends
        made meanwhile past ``until`` are not waited for (a sync under load ends), nor is a
        log started meanwhile (the old one was written out whole before it was sealed). A
        failed write-out is raised here and at every later call (the journal still holds
        what it had)."""
        behind = self._behind
        assert behind is not None
        log_id = self._state.current
        while self._behind is behind and self._state.current == log_id:
            if behind.out is None and (until is None or behind.written_to >= until):
                return
            if self._behind_error is not None:
                raise self._behind_error
            if self._writing:
                self._written.wait()
                continue
            out = behind.out if behind.out is not None else behind.hand_off()
            self._write_unlocked(self._state.fd, out)

    def _write_unlocked(self, fd: int, out: OutBuffer) -> None:
        """Under ``_lock``, with nothing being written: write ``out`` to ``fd`` with the lock
        released (appends go on into the other buffer; reads copy from this one meanwhile)."""
        behind = self._behind
        assert behind is not None
        self._writing = True
        error: OSError | None = None
        self._lock.release()
        try:
            written = os.pwrite(fd, out.view, out.base)
            if written != len(out.view):
                error = OSError(errno.EIO, f"short direct write: {written} of {len(out.view)}")
        except OSError as exc:
            error = exc
        finally:
            self._lock.acquire()
            self._writing = False
            self._written.notify_all()
        if error is not None:
            if self._behind_error is None:
                log.error("entry_log_write_failed", directory=str(self._dir), error=repr(error))
            self._behind_error = error
            raise error
        behind.written()

    def _start_log(self, log_id: int) -> None:
        """Under ``_lock`` (or in the constructor): make ``log_id`` the current log. If the
        file cannot be created nothing changes."""
        path = _log_path(self._dir, log_id)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        if self._behind is not None:
            fd = self._reopen_direct(path, fd)
        state = self._state
        state.current, state.fd, state.offset = log_id, fd, 0
        state.usage[log_id] = {}
        state.dir_dirty = True
        self._cached[log_id] = _CachedLog()

    def _reopen_direct(self, path: Path, fd: int) -> int:
        """Under ``_lock``: a new log, created through ``fd``, reopened ``O_DIRECT`` for
        positioned writes (``O_APPEND`` would put every rewrite of the last block at the
        end); the descriptor to write it through. Where the filesystem refuses ``O_DIRECT``
        (EINVAL), this entry log appends buffered from here on, through ``fd``."""
        behind = self._behind
        assert behind is not None
        try:
            direct_fd, direct = open_direct(path, os.O_WRONLY)
        except OSError:
            os.close(fd)
            path.unlink(missing_ok=True)  # as if never created: the next roll tries again
            raise
        if not direct:
            os.close(direct_fd)
            log.info("entry_log_direct_writes_unsupported", directory=str(self._dir))
            behind.close()
            self._behind = None
            return fd
        os.close(fd)
        behind.start()
        return direct_fd

    def _finish_behind(self) -> None:
        """Under ``_lock``, before the current log is sealed: every byte of it in the file,
        and the file cut to its last record (the last write-out left zeros to a block's end),
        so a sealed log is what buffered appends leave."""
        if self._behind is not None:
            self._write_out(self._state.offset)  # no append meanwhile: _append_lock is held
            os.ftruncate(self._state.fd, self._state.offset)

    def _seal_current(self) -> None:
        """Under ``_lock``: the current log takes no more appends; a new one starts (if it
        cannot, the current one stays current and the error is raised)."""
        self._finish_behind()
        state = self._state
        old = _Sealed(state.current, state.fd)
        size = state.offset
        self._start_log(state.current + 1)
        state.sealed.append(old)
        self._cached[old.log_id].size = size

    # -- durability -----------------------------------------------------------------------

    def sync(self) -> None:
        """Make everything appended so far durable: sealed logs are synced, summarized and
        closed; the current one is synced."""
        with self._sync_lock:
            with self._lock:
                if self._behind is not None and self._state.fd >= 0:
                    self._write_out(self._state.offset)  # what was appended before this call
                state = self._state
                sealed = list(state.sealed)
                fd = state.fd
                dir_dirty, state.dir_dirty = state.dir_dirty, False
            for item in sealed:
                os.fdatasync(item.fd)
                with self._lock:
                    usage = dict(state.usage[item.log_id])
                self._write_usage(item.log_id, usage)
                os.close(item.fd)
                with self._lock:
                    state.sealed.remove(item)
                    state.summarized.add(item.log_id)
            if fd >= 0:
                os.fdatasync(fd)
            if dir_dirty:  # a log was created (summaries are made durable as they are written)
                fsync_dir(self._dir)

    def _run_writeback(self) -> None:
        """Thread: start writeback of the current log whenever ``writeback_bytes`` more were
        appended."""
        while True:
            self._kick.wait()
            self._kick.clear()
            if self._closed:
                return
            if self._behind is not None:
                # A failure is logged, and raised by the next append or sync.
                with self._lock, contextlib.suppress(OSError):
                    self._write_out(None)
                continue
            with self._sync_lock:
                with self._lock:
                    fd = self._state.fd
                if fd >= 0:
                    try:
                        start_writeback(fd)
                    except OSError as exc:  # sync() will meet it again and fail the flush
                        log.warning("entry_log_writeback_failed", error=repr(exc))
                if self._page_cache_bytes:
                    self._trim_page_cache()

    def _trim_page_cache(self) -> None:
        """Writeback thread, under ``_sync_lock``: drop the pages of every log this process
        wrote that lie more than ``page_cache_bytes`` behind the last byte written (newest log
        first). The current log's range, and a sealed log's not yet synced, are written back
        first through the log's own descriptor (:func:`drop_cached_range`: the kernel keeps
        dirty pages); a synced log is dropped through a read descriptor, and forgotten once
        wholly behind. Advice only: a log removed meanwhile, or a failed call, changes nothing
        (its pages stay cached)."""
        with self._lock:
            state = self._state
            current, fd, offset = state.current, state.fd, state.offset
            logs = sorted(self._cached.items(), reverse=True)
            synced = {log_id for log_id in self._cached if log_id in state.summarized}
            # Valid while this thread holds _sync_lock: only sync() closes them, under it too.
            unsynced = {item.log_id: item.fd for item in state.sealed}
        room = self._page_cache_bytes
        for log_id, cached in logs:
            is_current = log_id == current and fd >= 0
            size = offset if is_current else cached.size
            if size is None:  # sealed for close: no size kept
                continue
            keep_from = page_floor(max(0, size - room))
            room = max(0, room - size)
            if is_current:
                write_fd = fd
            elif log_id in synced:
                write_fd = -1
            elif log_id in unsynced:
                write_fd = unsynced[log_id]
            else:
                continue  # neither: being closed; next time
            if keep_from > cached.dropped:
                self._drop_pages(log_id, write_fd, cached.dropped, keep_from)
                cached.dropped = keep_from
            if not is_current and keep_from >= size:
                with self._lock:
                    self._cached.pop(log_id, None)

    def _drop_pages(self, log_id: int, fd: int, start: int, end: int) -> None:
        """A range of a log still written to or not yet synced through its write fd (``fd``),
        written back first; a synced (so clean) log's (``fd`` -1) through a read fd of its
        own."""
        try:
            if fd >= 0:
                drop_cached_range(fd, start, end - start, write_back=True)
                return
            read_fd = os.open(_log_path(self._dir, log_id), os.O_RDONLY)
            try:
                drop_cached_range(read_fd, start, end - start)
            finally:
                os.close(read_fd)
        except OSError:
            pass  # removed meanwhile (compacted), or no advice here: nothing to drop

    def _write_usage(self, log_id: int, usage: dict[int, int]) -> None:
        body = _USAGE_HEAD.pack(len(usage)) + b"".join(
            _USAGE_ITEM.pack(ledger_id, size) for ledger_id, size in sorted(usage.items())
        )
        replace_durably(_usage_path(self._dir, log_id), body + _LEN.pack(crc32c.crc32c(body)))

    def _read_usage(self, log_id: int) -> dict[int, int] | None:
        try:
            data = _usage_path(self._dir, log_id).read_bytes()
        except FileNotFoundError:
            return None
        body, tail = data[:-4], data[-4:]
        if len(tail) < 4 or _LEN.unpack(tail)[0] != crc32c.crc32c(body):
            log.warning("entry_log_summary_corrupt", log_id=log_id, action="rescanning the log")
            return None
        (count,) = _USAGE_HEAD.unpack_from(body, 0)
        usage = {}
        for i in range(count):
            ledger_id, size = _USAGE_ITEM.unpack_from(body, _USAGE_HEAD.size + i * 16)
            usage[ledger_id] = size
        return usage

    def _summarize_by_scan(self, log_id: int) -> dict[int, int]:
        """Constructor: a log from a process that did not get to summarize it (it crashed)."""
        usage: dict[int, int] = {}
        for scanned in self.scan(log_id):
            loc = scanned.location
            usage[scanned.ledger_id] = usage.get(scanned.ledger_id, 0) + HEAD.size + loc.length
        self._write_usage(log_id, usage)
        log.info("entry_log_summarized_by_scan", log_id=log_id, ledgers=len(usage))
        return usage

    # -- reads ----------------------------------------------------------------------------

    def read(self, ledger_id: int, entry_id: int, location: EntryLocation) -> bytes:
        return self.read_many([(ledger_id, entry_id, location)])[0]

    def read_many(self, wanted: Sequence[tuple[int, int, EntryLocation]]) -> list[bytes]:
        """Payloads of (ledger id, entry id, location) in order; records lying close together
        in one log are read with one ``pread``. Raises :class:`StorageCorrupt` when a record
        is not the one the location names or fails its CRC."""
        out: list[bytes] = []
        start = 0
        while start < len(wanted):
            first = wanted[start][2]
            span_end = first.offset + HEAD.size + first.length
            gaps = 0  # bytes in the span that no wanted record occupies
            end = start + 1
            while end < len(wanted):
                loc = wanted[end][2]
                gap = loc.offset - span_end
                if loc.log_id != first.log_id or gap < 0 or gaps + gap > _COALESCE_SLACK:
                    break
                gaps += gap
                span_end = loc.offset + HEAD.size + loc.length
                end += 1
            data = self._pread(first.log_id, first.offset, span_end - first.offset)
            for ledger_id, entry_id, loc in wanted[start:end]:
                out.append(_check(data, loc.offset - first.offset, ledger_id, entry_id, loc))
            start = end
        return out

    def _pread(self, log_id: int, offset: int, size: int) -> bytes:
        tail = b""
        behind = self._behind
        if behind is not None:
            with self._lock:
                # The current log's bytes not yet written out are read from its buffers.
                if log_id == self._state.current and offset + size > behind.written_to:
                    start = max(offset, behind.written_to)
                    stop = min(offset + size, behind.end)
                    tail = behind.read(start, stop) if start < stop else b""
                    size = start - offset
            if not size:
                return tail
        reader = self._pin(log_id)
        try:
            data = os.pread(reader.fd, size, offset)
        finally:
            self._unpin(log_id, reader)
        if len(data) < size:
            raise StorageCorrupt(f"entry log {log_id} is shorter than an index entry says")
        return data + tail if tail else data

    def _pin(self, log_id: int) -> _Reader:
        """The log's read fd, kept open for later reads; the least recently used ones are
        closed past ``_MAX_READ_FDS`` (a big bookie has thousands of logs)."""
        with self._lock:
            readers = self._readers
            reader = readers.get(log_id)
            if reader is None:
                try:
                    fd = os.open(_log_path(self._dir, log_id), os.O_RDONLY)
                except FileNotFoundError as exc:
                    raise StorageCorrupt(f"entry log {log_id} is missing") from exc
                reader = readers[log_id] = _Reader(fd)
                while len(readers) > _MAX_READ_FDS:
                    oldest = readers.pop(next(iter(readers)))
                    oldest.retired = True  # closed now, or by its last user
                    if oldest.users == 0:
                        os.close(oldest.fd)
            else:
                readers.move_to_end(log_id)
            reader.users += 1
            return reader

    def _unpin(self, log_id: int, reader: _Reader) -> None:
        with self._lock:
            reader.users -= 1
            if reader.retired and reader.users == 0:
                os.close(reader.fd)

    def scan(self, log_id: int) -> Iterator[ScannedEntry]:
        """Every valid record of a log in order, up to the first torn or corrupt one."""
        with open(_log_path(self._dir, log_id), "rb") as f:
            buf = b""
            base = 0  # file offset of buf[0]
            pos = 0
            while True:
                if len(buf) - pos >= HEAD.size:
                    length, ledger_id, entry_id, crc = HEAD.unpack_from(buf, pos)
                    if length > _MAX_PAYLOAD:
                        return
                    end = pos + HEAD.size + length
                    if end <= len(buf):
                        body = memoryview(buf)[pos + HEAD.size : end]
                        if record_crc(ledger_id, entry_id, body) != crc:
                            return
                        location = EntryLocation(log_id, base + pos, length)
                        yield ScannedEntry(ledger_id, entry_id, location, body)
                        pos = end
                        continue
                more = f.read(_SCAN_CHUNK)
                if not more:
                    return
                buf = buf[pos:] + more
                base += pos
                pos = 0

    # -- GC -------------------------------------------------------------------------------

    def sealed_usage(self) -> dict[int, dict[int, int]]:
        """Bytes per ledger of every sealed, synced log (those GC may remove or compact)."""
        with self._lock:
            state = self._state
            return {log_id: dict(state.usage[log_id]) for log_id in state.summarized}

    def remove(self, log_id: int, stop: threading.Event | None = None) -> None:
        """Delete a sealed log whose entries no index entry points to any more (durably).
        Blocking for a few seconds: the file is renamed ``<n>.log.removed`` (durably), then
        shrunk gradually (see :func:`~magnetar.bookie.fileio.remove_gradually`), unless a
        reader still has it open (it read through an index entry that was current when it
        looked), which keeps its data until it is done. Once ``stop`` is set the shrinking
        gives up at its next step: the renamed file is no log any more, and the next open
        unlinks it."""
        with self._lock:
            state = self._state
            if log_id not in state.summarized:
                raise ValueError(f"entry log {log_id} is not sealed and synced")
            state.summarized.discard(log_id)
            del state.usage[log_id]
            reader = self._readers.pop(log_id, None)
            in_use = reader is not None and reader.users > 0
            if reader is not None:
                reader.retired = True
                if not in_use:
                    os.close(reader.fd)
        _usage_path(self._dir, log_id).unlink(missing_ok=True)
        path = _log_path(self._dir, log_id)
        if in_use:
            path.unlink(missing_ok=True)
        else:
            removed = path.with_name(path.name + _REMOVED_SUFFIX)
            try:
                os.replace(path, removed)
            except FileNotFoundError:
                pass
            else:
                fsync_dir(self._dir)
                if not remove_gradually(removed, stop=stop):
                    log.info("entry_log_removal_deferred", log_id=log_id)
                    return
        log.info("entry_log_removed", log_id=log_id)

    def list_logs(self) -> list[int]:
        return sorted(
            int(p.stem) for p in self._dir.iterdir() if p.suffix == _LOG_SUFFIX and p.stem.isdigit()
        )

    @property
    def current_log(self) -> int:
        with self._lock:
            return self._state.current

    def close(self) -> None:
        """Seal and sync everything; stop the writeback thread; close every fd."""
        if self._closed:
            return
        with self._append_lock, self._lock:
            self._seal_current_for_close()
        self.sync()
        self._closed = True
        self._kick.set()
        self._writeback.join()
        with self._lock:
            for reader in self._readers.values():
                if reader.users == 0:
                    os.close(reader.fd)
                reader.retired = True
            self._readers.clear()
            if self._behind is not None:
                self._behind.close()

    def _seal_current_for_close(self) -> None:
        """Under ``_lock``: the current log is sealed and no new one is started."""
        self._finish_behind()
        state = self._state
        state.sealed.append(_Sealed(state.current, state.fd))
        state.fd = -1


def _check(data: bytes, at: int, ledger_id: int, entry_id: int, location: EntryLocation) -> bytes:
    try:
        length, got_ledger, got_entry, crc = HEAD.unpack_from(data, at)
    except struct.error as exc:
        raise StorageCorrupt(f"entry {ledger_id}:{entry_id}: no record at {location}") from exc
    payload = data[at + HEAD.size : at + HEAD.size + length]
    if (got_ledger, got_entry, length) != (ledger_id, entry_id, location.length) or record_crc(
        ledger_id, entry_id, payload
    ) != crc:
        raise StorageCorrupt(
            f"entry {ledger_id}:{entry_id}: the record at {location} does not match "
            "(corrupt entry log)"
        )
    return payload
