"""The bookie's journal: an append-only write-ahead log with group commit and fdatasync.

Layout: ``<dir>/00000001.log``, ``00000002.log``, ... Each segment is a sequence of records::

    length (u32 BE) | crc32c(payload) (u32 BE) | payload (length bytes)

The payload is a :class:`JournalRecord` (an add, a fence or a ledger delete). ``<dir>/lastMark``
holds the *log mark*: the position up to which every record is also durable in ledger storage.

Invariants:

* An :meth:`Journal.append` completes only after its record is written, fdatasync'ed (unless
  ``sync`` is off) and applied to the :class:`JournalSink` (ledger storage). So a record whose
  append completed survives ``kill -9`` and is readable at once.
* Records are written, synced and applied in the order they were enqueued.
* Replay on open reads every record after the log mark in order and applies it to the sink.
  It stops a segment at its first torn or corrupt record (short record, zero length, CRC
  mismatch), truncates the segment there and logs a warning: every valid record before it is
  replayed, nothing after it is (a record after a torn one was never acknowledged, because the
  one before it had not been synced when it was written). After replay the sink is flushed,
  the mark moves past every replayed record, and a fresh segment is started.
* A segment is deleted only once the log mark lies in a later segment.

Concurrency: appenders on the event loop hand records to one writer thread through a
thread-safe queue bounded (on the loop side) in count and bytes. The thread takes everything
queued as one group, frames it (records are encoded and checksummed there, not on the loop: for
big payloads ``crc32c`` runs without the GIL), writes it (big payloads with ``writev``, never
copied into one buffer), does one ``fdatasync`` for the group and applies it to the sink, then
posts the outcome back to the loop and at once takes the next group: the disk never waits for
the loop to get round to starting a write, which under load cost a group a few milliseconds
(BookKeeper's journal thread works the same way). Completions posted while the loop is busy
are delivered together by one callback. Appenders await a future per enqueued unit.
:meth:`Journal.checkpoint` runs on the loop (its flush in the default executor) concurrently
with writes. Call everything but the writer thread from the loop that opened the journal.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import os
import queue
import struct
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Protocol

import crc32c

from magnetar.bookie.errors import JournalClosed, JournalFailed
from magnetar.bookie.fileio import fsync_dir, remove_gradually, replace_durably, write_all
from magnetar.telemetry import get_logger

log = get_logger(__name__)

_FRAME = struct.Struct(">II")
_RECORD = struct.Struct(">BQqqIH")
_MARK = struct.Struct(">QQI")
_MARK_FILE = "lastMark"
_SEGMENT_SUFFIX = ".log"
_REPLAY_CHUNK = 1024
_RECORD_OVERHEAD = _FRAME.size + _RECORD.size  # framed bytes of a record besides key+payload


class RecordKind(enum.IntEnum):
    ADD = 1
    FENCE = 2
    DELETE = 3


class JournalRecord(NamedTuple):
    """One journalled change. ``entry_id``/``lac``/``digest``/``payload`` matter for ADD only.

    A NamedTuple rather than a frozen dataclass: the bookie builds one per add on the event
    loop, and a tuple is built in a third of the time."""

    kind: RecordKind
    ledger_id: int
    entry_id: int = -1
    lac: int = -1
    digest: int = 0
    master_key: bytes = b""
    payload: bytes = b""

    def encode(self) -> bytes:
        return b"".join((self._head(), self.payload))

    def _head(self) -> bytes:
        """The encoded record up to its payload."""
        head = _RECORD.pack(
            self.kind,
            self.ledger_id,
            self.entry_id,
            self.lac,
            self.digest,
            len(self.master_key),
        )
        return head + self.master_key

    def frame_into(self, parts: list[bytes]) -> None:
        """Append this record's on-disk form (``frame(self.encode())``) to ``parts`` without
        copying the payload: the CRC runs over the head, then continues over the payload."""
        head = self._head()
        crc = crc32c.crc32c(self.payload, crc32c.crc32c(head))
        parts += (_FRAME.pack(len(head) + len(self.payload), crc), head, self.payload)

    @classmethod
    def decode(cls, data: bytes | memoryview) -> JournalRecord:
        kind, ledger_id, entry_id, lac, digest, mk_len = _RECORD.unpack_from(data, 0)
        start = _RECORD.size
        return cls(
            kind=RecordKind(kind),
            ledger_id=ledger_id,
            entry_id=entry_id,
            lac=lac,
            digest=digest,
            master_key=bytes(data[start : start + mk_len]),
            payload=bytes(data[start + mk_len :]),
        )


def framed_size(records: Sequence[JournalRecord]) -> int:
    """Bytes ``records`` take in a segment (frame headers included)."""
    size = sum([len(r.master_key) + len(r.payload) for r in records])
    return size + _RECORD_OVERHEAD * len(records)


def frame(payload: bytes) -> bytes:
    """The on-disk form of one record payload."""
    return _FRAME.pack(len(payload), crc32c.crc32c(payload)) + payload


@dataclass(frozen=True, slots=True, order=True)
class JournalPosition:
    """A byte position in the journal: (segment number, offset within it)."""

    segment: int
    offset: int


class JournalSink(Protocol):
    """Where journalled records go after they are durable (ledger storage).

    Both methods are called from executor threads, never from the loop.
    """

    def apply(self, records: Sequence[JournalRecord]) -> None:
        """Apply records in order. Must be idempotent: replay may apply a record again."""
        ...

    def flush(self) -> None:
        """Make every record applied so far durable without the journal."""
        ...


@dataclass(frozen=True, slots=True)
class JournalConfig:
    sync: bool = True
    segment_bytes: int = 64 * 1024 * 1024
    max_group_bytes: int = 4 * 1024 * 1024
    max_group_records: int = 4096
    # BookKeeper's journalMaxGroupWaitMSec (Pulsar's bookkeeper.conf sets 1): the writer waits
    # this long after a group's first record before writing it. At 10k msg/s it halved the
    # fdatasyncs and took the broker from 83-85% to 64% of a core (docs/benchmarks.md, round
    # 4; a small write + fdatasync cost ~120 us of CPU here, measured ad hoc); it adds up to
    # this much to an acknowledgement at low rates.
    max_group_wait_ms: float = 1.0
    queue_records: int = 16_384
    queue_bytes: int = 64 * 1024 * 1024


@dataclass(slots=True)
class _Pending:
    records: Sequence[JournalRecord]
    size: int  # framed bytes
    future: asyncio.Future[None]


class _Written(NamedTuple):
    """The writer thread's outcome for one group, posted to the loop."""

    group: list[_Pending]
    size: int  # framed bytes of the group
    position: JournalPosition | None  # the journal's end after the group (None: not written)
    rolled: bool
    error: BaseException | None  # JournalClosed: dropped at close; anything else: I/O failure


def _segment_path(directory: Path, number: int) -> Path:
    return directory / f"{number:08d}{_SEGMENT_SUFFIX}"


def list_segments(directory: Path) -> list[int]:
    """Segment numbers present in ``directory``, ascending."""
    numbers = []
    for p in directory.iterdir():
        if p.suffix == _SEGMENT_SUFFIX and p.stem.isdigit():
            numbers.append(int(p.stem))
    return sorted(numbers)


def read_mark(directory: Path) -> JournalPosition:
    """The log mark, or (0, 0) when there is none (a new or never-checkpointed journal)."""
    try:
        data = (directory / _MARK_FILE).read_bytes()
    except FileNotFoundError:
        return JournalPosition(0, 0)
    if len(data) != _MARK.size:
        raise JournalFailed(f"journal mark file {directory / _MARK_FILE} has a bad size")
    segment, offset, crc = _MARK.unpack(data)
    if crc != crc32c.crc32c(data[:16]):
        raise JournalFailed(f"journal mark file {directory / _MARK_FILE} fails its checksum")
    return JournalPosition(segment, offset)


def write_mark(directory: Path, mark: JournalPosition) -> None:
    """Atomically replace the log mark (write, fsync, rename, fsync dir)."""
    body = struct.pack(">QQ", mark.segment, mark.offset)
    replace_durably(directory / _MARK_FILE, body + struct.pack(">I", crc32c.crc32c(body)))


def scan_segment(data: bytes, start: int) -> tuple[list[JournalRecord], int]:
    """Decode records from ``start``; return them and the offset just after the last good one."""
    records: list[JournalRecord] = []
    view = memoryview(data)
    pos = start
    while pos + _FRAME.size <= len(data):
        length, crc = _FRAME.unpack_from(data, pos)
        body_start = pos + _FRAME.size
        if length == 0 or body_start + length > len(data):
            break
        body = view[body_start : body_start + length]
        if crc32c.crc32c(body) != crc:
            break
        try:
            records.append(JournalRecord.decode(body))
        except (struct.error, ValueError):
            break
        pos = body_start + length
    return records, pos


def replay(directory: Path, sink: JournalSink) -> tuple[int, int]:
    """Apply every record after the mark to ``sink``; truncate torn tails. Blocking.

    Returns (records replayed, highest segment number seen).
    """
    mark = read_mark(directory)
    replayed = 0
    segments = list_segments(directory)
    for number in segments:
        if number < mark.segment:
            continue
        path = _segment_path(directory, number)
        data = path.read_bytes()
        start = mark.offset if number == mark.segment else 0
        records, end = scan_segment(data, start)
        for i in range(0, len(records), _REPLAY_CHUNK):
            sink.apply(records[i : i + _REPLAY_CHUNK])
        replayed += len(records)
        if end < len(data):
            log.warning(
                "journal_torn_tail_truncated",
                segment=str(path),
                valid_bytes=end,
                dropped_bytes=len(data) - end,
                records_replayed=len(records),
            )
            with open(path, "r+b") as f:
                f.truncate(end)
                os.fsync(f.fileno())
    return replayed, (segments[-1] if segments else 0)


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
        self._offset = 0
        self._applied = JournalPosition(0, 0)
        self._failure: BaseException | None = None
        self._closing = False
        self._checkpoint_lock = asyncio.Lock()
        self.rolled = asyncio.Event()
        """Set when a segment was rolled over; the owner may checkpoint then."""

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
        self._delete_before(self._segment)
        self._open_segment()
        self._applied = JournalPosition(self._segment, 0)
        log.info("journal_opened", directory=str(self._dir), replayed=replayed, segment=last + 1)

    def _open_segment(self) -> None:
        path = _segment_path(self._dir, self._segment)
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._offset = os.fstat(self._fd).st_size
        fsync_dir(self._dir)

    def _delete_before(self, segment: int) -> None:
        """Blocking, about a second per full segment: see :func:`remove_gradually`."""
        for number in list_segments(self._dir):
            if number < segment:
                remove_gradually(_segment_path(self._dir, number))

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
        return self._hand_off(records, size)

    async def enqueue_many(self, records: Sequence[JournalRecord]) -> asyncio.Future[None]:
        """Queue ``records`` as one unit in order; one future for all of them.

        A batch from the add stream costs one queue slot and one future however many entries it
        carries, which keeps the per-entry work on the event loop small.
        """
        future = self.enqueue_many_nowait(records)
        if future is not None:
            return future
        self._blocked += 1
        try:
            async with self._enqueue_order:
                size = framed_size(records)
                while not self._has_room(size):
                    self._space.clear()
                    await self._space.wait()
                    self._check_open()
                return self._hand_off(records, size)
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

    def _hand_off(self, records: Sequence[JournalRecord], size: int) -> asyncio.Future[None]:
        self._queued_items += 1
        self._queued_bytes += size
        self._idle.clear()
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._handoff.put(_Pending(records, size, future))
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
                if group_wait_s:
                    time.sleep(group_wait_s)  # let the group grow (GIL released meanwhile)
                group, size, stop = self._take_group(first)
                if self._dropping:
                    self._post(_Written(group, size, None, False, JournalClosed("closed")))
                    continue
                if failure is None:
                    try:
                        position, rolled = self._write_group(group)
                    except Exception as exc:  # an I/O error: reported to every appender
                        failure = exc
                    else:
                        self._post(_Written(group, size, position, rolled, None))
                        continue
                self._post(_Written(group, size, None, False, failure))
        finally:
            self._close_fd()

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

    def _post(self, written: _Written) -> None:
        """Thread: queue an outcome; wake the loop unless a delivery is already due."""
        self._written.append(written)
        if self._delivery_scheduled:
            return
        self._delivery_scheduled = True
        assert self._loop is not None
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
            self._loop.call_soon_threadsafe(self._deliver)

    def _deliver(self) -> None:
        """Loop: settle every posted group's futures, in write order. The flag is cleared
        before draining, so an outcome posted meanwhile is either drained now or scheduled
        anew (a delivery may then find nothing left: harmless)."""
        self._delivery_scheduled = False
        written = self._written
        while written:
            group, size, position, rolled, error = written.popleft()
            if error is None:
                assert position is not None
                self._applied = position
                if rolled:
                    self.rolled.set()
                for item in group:
                    if not item.future.done():
                        item.future.set_result(None)
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
                    if not item.future.done():
                        item.future.set_exception(failed)
            self._queued_items -= len(group)
            self._queued_bytes -= size
        self._space.set()
        if self._queued_items == 0:
            self._idle.set()

    def _write_group(self, group: Sequence[_Pending]) -> tuple[JournalPosition, bool]:
        """Thread: frame and write the group, one fdatasync, then apply to the sink; maybe
        roll over."""
        parts: list[bytes] = []
        for item in group:
            for record in item.records:
                record.frame_into(parts)
        self._offset += write_all(self._fd, parts)
        if self._config.sync:
            os.fdatasync(self._fd)
        self._sink.apply([record for item in group for record in item.records])
        position = JournalPosition(self._segment, self._offset)
        rolled = False
        if self._offset >= self._config.segment_bytes:
            os.close(self._fd)
            self._segment += 1
            self._open_segment()
            rolled = True
        return position, rolled

    async def checkpoint(self) -> JournalPosition:
        """Flush the sink, move the log mark to what it holds, delete older segments."""
        async with self._checkpoint_lock:
            mark = self._applied
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(None, self._sink.flush)
            await loop.run_in_executor(None, write_mark, self._dir, mark)
            await loop.run_in_executor(None, self._delete_before, mark.segment)
            log.debug("journal_checkpoint", segment=mark.segment, offset=mark.offset)
            return mark

    async def close(self, drain_timeout_s: float = 10.0) -> None:
        """Refuse new records, wait (bounded) for queued ones to be written, stop the writer.
        What the writer has not taken by the timeout is dropped: its appenders get
        :class:`JournalClosed`."""
        self._closing = True
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
        self._space.set()

    def _close_fd(self) -> None:
        if self._fd < 0:
            return
        try:
            if self._config.sync:
                os.fdatasync(self._fd)
        except OSError as exc:
            log.warning("journal_close_sync_failed", directory=str(self._dir), error=repr(exc))
        finally:
            os.close(self._fd)
            self._fd = -1
