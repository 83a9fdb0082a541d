"""Journal: group commit, replay after restart, torn and corrupt tails, checkpoints."""

from __future__ import annotations

import asyncio
import errno
import fcntl
import itertools
import os
import shutil
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import crc32c
import pytest
from structlog.testing import capture_logs

from magnetar.bookie.errors import JournalClosed, JournalFailed
from magnetar.bookie.journal import Journal, JournalConfig
from magnetar.bookie.journal_record import (
    JournalRecord,
    RecordKind,
    frame,
    frame_records,
    framed_size,
    scan_segment,
)
from magnetar.bookie.journal_replay import list_segments, segment_path
from magnetar.checksum import COMBINE_FROM
from tests.kit.page_cache import (
    HAVE_FINCORE,
    drops_pages,
    refuse_o_direct,
    resident_bytes,
    supports_direct_io,
)


class ListSink:
    """A sink that remembers what it was given, in order (a stand-in only for storage)."""

    def __init__(self) -> None:
        self.records: list[JournalRecord] = []
        self.groups: list[int] = []
        self.flushes = 0
        self._lock = threading.Lock()

    def apply(self, records: Sequence[JournalRecord], payload_crcs: Sequence[int] = ()) -> None:
        with self._lock:
            self.records.extend(records)
            self.groups.append(len(records))

    def flush(self) -> None:
        self.flushes += 1


def add(ledger: int, entry: int, payload: bytes = b"x") -> JournalRecord:
    return JournalRecord(
        kind=RecordKind.ADD,
        ledger_id=ledger,
        entry_id=entry,
        lac=entry - 1,
        digest=entry * 7,
        master_key=b"mk",
        payload=payload,
    )


def test_record_round_trip() -> None:
    rec = JournalRecord(RecordKind.FENCE, 2**63, -1, -1, 0xFFFFFFFF, b"key", b"")
    assert JournalRecord.decode(rec.encode()) == rec
    rec2 = add(5, 9, b"\x00" * 1000)
    assert JournalRecord.decode(rec2.encode()) == rec2


async def test_group_commit_batches_concurrent_appends(tmp_path: Path) -> None:
    sink = ListSink()
    journal = await Journal.open(tmp_path, sink)
    records = [add(1, i) for i in range(500)]
    await asyncio.wait_for(asyncio.gather(*(journal.append(r) for r in records)), 10)
    await journal.close()
    assert sink.records == records
    # 500 concurrent appends must share fsyncs: far fewer groups than records.
    assert len(sink.groups) < 100


async def test_append_completes_only_after_fdatasync_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The durability rule (docs/storage.md): no add is acknowledged before its group is
    fdatasync'd. A kill -9 test cannot show this (the page cache survives a process kill), so
    the syscall is held here and the append must still be pending while it is. This is the
    write + fdatasync path (``dsync_writes`` off)."""
    real_fdatasync = os.fdatasync
    entered, release = threading.Event(), threading.Event()

    def held_fdatasync(fd: int) -> None:
        entered.set()
        release.wait(10)
        real_fdatasync(fd)

    sink = ListSink()
    journal = await Journal.open(tmp_path, sink, JournalConfig(dsync_writes=False))
    monkeypatch.setattr(os, "fdatasync", held_fdatasync)
    await _assert_pending_while_held(journal, sink, entered, release)


async def test_append_completes_only_after_its_dsync_write_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same rule with buffered O_DSYNC writes: the group goes out in one write to a
    descriptor opened O_DSYNC (the write returns once the data is on stable storage); the
    append stays pending while that write is held, and the write is made on an O_DSYNC
    descriptor."""
    real_write = os.write
    entered, release = threading.Event(), threading.Event()
    flags: list[int] = []

    def held_write(fd: int, data: bytes | memoryview) -> int:
        if not entered.is_set():
            flags.append(fcntl.fcntl(fd, fcntl.F_GETFL))
            entered.set()
            release.wait(10)
        return real_write(fd, data)

    sink = ListSink()
    journal = await Journal.open(tmp_path, sink, JournalConfig(direct_writes=False))
    monkeypatch.setattr(os, "write", held_write)
    await _assert_pending_while_held(journal, sink, entered, release)
    assert flags
    assert flags[0] & os.O_DSYNC
    assert not flags[0] & getattr(os, "O_DIRECT", 0)


@pytest.mark.skipif(not hasattr(os, "O_DIRECT"), reason="no O_DIRECT on this platform")
async def test_append_completes_only_after_its_direct_dsync_write_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default path: the group's blocks go out in one positioned write to a descriptor
    opened O_DIRECT and O_DSYNC; the append stays pending while that write is held."""
    if not supports_direct_io(tmp_path):
        pytest.skip("this filesystem refuses O_DIRECT")
    real_pwrite = os.pwrite
    entered, release = threading.Event(), threading.Event()
    flags: list[int] = []

    def held_pwrite(fd: int, data: bytes | memoryview, offset: int) -> int:
        if not entered.is_set() and bytes(data[:4]) != bytes(4):  # a record, not zero-fill
            flags.append(fcntl.fcntl(fd, fcntl.F_GETFL))
            entered.set()
            release.wait(10)
        return real_pwrite(fd, data, offset)

    sink = ListSink()
    journal = await Journal.open(tmp_path, sink)
    monkeypatch.setattr(os, "pwrite", held_pwrite)
    await _assert_pending_while_held(journal, sink, entered, release)
    assert flags
    assert flags[0] & os.O_DSYNC
    assert flags[0] & os.O_DIRECT


async def _assert_pending_while_held(
    journal: Journal, sink: ListSink, entered: threading.Event, release: threading.Event
) -> None:
    try:
        appending = asyncio.create_task(journal.append(add(1, 0)))
        assert await asyncio.to_thread(entered.wait, 5)
        await asyncio.sleep(0.05)
        assert not appending.done()
        assert sink.records == []  # applied to storage only after the sync too
        release.set()
        async with asyncio.timeout(5):
            await appending
        assert sink.records == [add(1, 0)]
    finally:
        release.set()
        await journal.close()


async def test_replay_after_restart(tmp_path: Path) -> None:
    sink = ListSink()
    journal = await Journal.open(tmp_path, sink)
    records = [add(1, i, bytes([i % 256]) * 100) for i in range(50)]
    for r in records:
        await journal.append(r)
    # No checkpoint, as after a crash.
    await journal.close()  # close writes no log mark: the restart still replays everything
    replayed = ListSink()
    journal2 = await Journal.open(tmp_path, replayed)
    assert replayed.records == records
    await journal2.append(add(1, 50))
    await journal2.close()


async def test_checkpoint_moves_mark_and_deletes_segments(tmp_path: Path) -> None:
    sink = ListSink()
    journal = await Journal.open(tmp_path, sink, JournalConfig(segment_bytes=4096))
    for i in range(100):
        await journal.append(add(1, i, b"y" * 200))
    assert len(list_segments(tmp_path)) > 3
    await journal.checkpoint()
    assert len(list_segments(tmp_path)) <= 2
    await journal.append(add(1, 100))
    await journal.close()
    replayed = ListSink()
    journal2 = await Journal.open(tmp_path, replayed)
    await journal2.close()
    # Only what came after the mark is replayed.
    assert replayed.records == [add(1, 100)]


async def test_a_checkpoint_after_close_leaves_old_segments_to_the_next_open(
    tmp_path: Path,
) -> None:
    # The bookie's close (close, then checkpoint) writes the log mark but does not wait for the
    # gradual deletion of older segments; the next open deletes them and replays nothing old.
    journal = await Journal.open(tmp_path, ListSink(), JournalConfig(segment_bytes=4096))
    for i in range(100):
        await journal.append(add(1, i, b"y" * 200))
    segments = len(list_segments(tmp_path))
    assert segments > 3
    await journal.close()
    await journal.checkpoint()
    assert len(list_segments(tmp_path)) == segments
    replayed = ListSink()
    journal2 = await Journal.open(tmp_path, replayed)
    assert replayed.records == []
    assert len(list_segments(tmp_path)) == 1  # only the fresh one
    await journal2.close()


@pytest.mark.parametrize("damage", ["truncate", "flip"])
async def test_torn_tail_is_truncated_and_earlier_records_replay(
    tmp_path: Path, damage: str
) -> None:
    sink = ListSink()
    journal = await Journal.open(tmp_path, sink)
    records = [add(3, i, b"z" * 64) for i in range(20)]
    for r in records:
        await journal.append(r)
    await journal.close()
    segment = tmp_path / f"{list_segments(tmp_path)[-1]:08d}.log"
    data = bytearray(segment.read_bytes())
    if damage == "truncate":
        data = data[:-5]
    else:
        data[-10] ^= 0xFF
    segment.write_bytes(bytes(data))

    replayed = ListSink()
    journal2 = await Journal.open(tmp_path, replayed)
    assert replayed.records == records[:-1]
    await journal2.append(add(3, 19, b"again"))
    await journal2.close()

    assert replayed.records == [*records[:-1], add(3, 19, b"again")]
    # Reopening replays only what followed the post-recovery mark: the new append, and the
    # dropped record never comes back.
    again = ListSink()
    journal3 = await Journal.open(tmp_path, again)
    await journal3.close()
    assert again.records == [add(3, 19, b"again")]


async def test_close_refuses_new_records(tmp_path: Path) -> None:
    journal = await Journal.open(tmp_path, ListSink())
    await journal.close()
    with pytest.raises(JournalClosed, match="closing"):
        await journal.append(add(1, 0))


async def test_a_group_waits_max_group_wait_for_more_records(tmp_path: Path) -> None:
    sink = ListSink()
    journal = await Journal.open(tmp_path, sink, JournalConfig(max_group_wait_ms=200))
    try:
        first = asyncio.create_task(journal.append(add(1, 0)))
        await asyncio.sleep(0.05)
        assert not first.done()  # still inside the group's wait
        await asyncio.wait_for(asyncio.gather(first, journal.append(add(1, 1))), 5)
        assert sink.groups == [2]
    finally:
        await journal.close()


class HeldSink(ListSink):
    """A sink whose ``apply`` waits for :attr:`release` (so the writer thread is held)."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.release = threading.Event()

    def apply(self, records: Sequence[JournalRecord], payload_crcs: Sequence[int] = ()) -> None:
        self.entered.set()
        self.release.wait(10)
        super().apply(records)


class FailingSink(ListSink):
    def apply(self, records: Sequence[JournalRecord], payload_crcs: Sequence[int] = ()) -> None:
        raise OSError(28, "No space left on device")


async def test_write_failure_fails_the_group_and_refuses_what_follows(tmp_path: Path) -> None:
    journal = await Journal.open(tmp_path, FailingSink())
    with pytest.raises(JournalFailed, match="No space left"):
        await asyncio.wait_for(journal.append(add(1, 0)), 5)
    assert journal.failed
    with pytest.raises(JournalFailed, match="failed earlier"):
        await journal.append(add(1, 1))
    await asyncio.wait_for(journal.close(), 5)


async def test_a_full_queue_makes_callers_wait_and_keeps_call_order(tmp_path: Path) -> None:
    sink = HeldSink()
    journal = await Journal.open(tmp_path, sink, JournalConfig(queue_records=2))
    try:
        first = await journal.enqueue(add(1, 0))
        assert await asyncio.to_thread(sink.entered.wait, 5)  # the writer holds record 0
        second = journal.enqueue_many_nowait([add(1, 1)])
        assert second is not None
        assert journal.enqueue_many_nowait([add(1, 2)]) is None  # two units queued: full
        waiting = [asyncio.create_task(journal.append(add(1, e))) for e in (2, 3, 4)]
        await asyncio.sleep(0.05)
        assert not any(t.done() for t in waiting)
        assert journal.enqueue_many_nowait([add(1, 5)]) is None  # others wait: no overtaking
        sink.release.set()
        async with asyncio.timeout(5):
            await asyncio.gather(first, second, *waiting)
        assert [r.entry_id for r in sink.records] == [0, 1, 2, 3, 4]
    finally:
        sink.release.set()
        await journal.close()


async def test_close_drops_what_the_writer_has_not_taken(tmp_path: Path) -> None:
    sink = HeldSink()
    journal = await Journal.open(tmp_path, sink)
    taken = await journal.enqueue(add(1, 0))
    assert await asyncio.to_thread(sink.entered.wait, 5)
    queued = [await journal.enqueue(add(1, e)) for e in (1, 2)]
    closing = asyncio.create_task(journal.close(drain_timeout_s=0.1))
    await asyncio.sleep(0.3)  # the drain timed out; the writer is still in record 0's group
    assert not closing.done()
    sink.release.set()
    await asyncio.wait_for(closing, 5)
    await taken  # written before the close
    for future in queued:
        with pytest.raises(JournalClosed, match="was closed"):
            await future
    assert [r.entry_id for r in sink.records] == [0]


async def test_callback_units_are_told_in_write_order_once_durable(tmp_path: Path) -> None:
    """``enqueue_callback_nowait``: each unit's callback runs once its group is durable and
    applied, in write order, and a callback that raises does not stop the others."""
    sink = HeldSink()
    journal = await Journal.open(tmp_path, sink)
    told: list[tuple[int, BaseException | None, int]] = []
    all_told = asyncio.Event()

    def callback(entry: int) -> Callable[[BaseException | None], None]:
        def done(error: BaseException | None) -> None:
            told.append((entry, error, len(sink.records)))
            if len(told) == 4:
                all_told.set()
            if entry == 1:
                raise RuntimeError("a broken caller")

        return done

    try:
        assert journal.enqueue_callback_nowait([add(1, 0)], callback(0))
        assert await asyncio.to_thread(sink.entered.wait, 5)  # the writer holds record 0
        for entry in (1, 2):
            assert journal.enqueue_callback_nowait([add(1, entry)], callback(entry))
        await asyncio.sleep(0.05)
        assert told == []  # nothing is told before its group is applied
        sink.release.set()
        await journal.enqueue_callback([add(1, 3)], callback(3))
        await asyncio.wait_for(all_told.wait(), 5)
        assert [entry for entry, _, _ in told] == [0, 1, 2, 3]
        assert all(error is None for _, error, _ in told)
        assert all(applied > entry for entry, _, applied in told)
    finally:
        sink.release.set()
        await journal.close()


async def test_callback_units_get_the_write_failure(tmp_path: Path) -> None:
    journal = await Journal.open(tmp_path, FailingSink())
    told: asyncio.Future[BaseException | None] = asyncio.get_running_loop().create_future()
    assert journal.enqueue_callback_nowait([add(1, 0)], told.set_result)
    error = await asyncio.wait_for(told, 5)
    assert isinstance(error, JournalFailed)
    with pytest.raises(JournalFailed, match="failed earlier"):
        journal.enqueue_callback_nowait([add(1, 1)], told.set_result)
    await asyncio.wait_for(journal.close(), 5)


def test_frame_records_is_each_records_frame_in_order() -> None:
    """The group framing (one call per group) lays out exactly what framing each record on
    its own does, so the scan (replay) reads it back unchanged."""
    records = [
        add(1, 0, b"a" * 10),
        JournalRecord(RecordKind.FENCE, 1),
        add(2, 5, b""),
        JournalRecord(RecordKind.DELETE, 3, master_key=b""),
        add(2, 6, os.urandom(70_000)),
        add(2, 7, os.urandom(COMBINE_FROM - 1)),  # the last length checksummed in one pass
        add(2, 8, os.urandom(COMBINE_FROM)),  # the first combined
        add(2, 9, os.urandom(300_000)),  # combined in either build
    ]
    parts, size, payload_crcs = frame_records(records)
    expected = b"".join(frame(r.encode()) for r in records)
    assert b"".join(parts) == expected
    assert size == len(expected) == framed_size(records)
    assert scan_segment(expected, 0) == (records, len(expected))
    assert payload_crcs == [
        crc32c.crc32c(r.payload) if len(r.payload) >= COMBINE_FROM else -1 for r in records
    ]
    assert payload_crcs[-1] >= 0


def test_known_payload_checksums_frame_the_same_records_without_the_payloads() -> None:
    """Given a payload's checksum (an in-process add: from its digest), the record's is combined
    from it, short payloads included: the same bytes, the same checksums handed on. The given
    one is used as it is, unread (one that is wrong makes its record end the scan)."""
    records = [add(3, i, os.urandom(size)) for i, size in enumerate([0, 5, 9000, 200_000, 40])]
    known = [crc32c.crc32c(r.payload) if i % 2 else -1 for i, r in enumerate(records)]
    plain, size, plain_crcs = frame_records(records)
    parts, known_size, known_crcs = frame_records(records, known)
    assert (b"".join(parts), known_size) == (b"".join(plain), size)
    assert known_crcs == [k if k >= 0 else c for k, c in zip(known, plain_crcs, strict=True)]
    wrong = [-1, -1, -1, known[3] ^ 1, -1]
    data = b"".join(frame_records(records, wrong)[0])
    assert scan_segment(data, 0)[0] == records[:3]


async def test_units_with_and_without_checksums_share_a_group_and_replay(
    tmp_path: Path,
) -> None:
    """Units that bring their payloads' checksums and units that do not, taken as one group:
    each record is framed from its own unit's checksum (a checksum one place off would fail
    its record at replay), and every record replays."""
    sink = ListSink()
    journal = await Journal.open(tmp_path, sink, JournalConfig(max_group_wait_ms=50))
    units = [
        [add(5, 0, os.urandom(9000)), add(5, 1, os.urandom(20))],
        [add(5, 2, os.urandom(30_000))],
        [add(5, 3, os.urandom(12_000)), add(5, 4, os.urandom(15_000))],
    ]
    given = [
        [crc32c.crc32c(r.payload) for r in units[0]],
        [],
        [-1, crc32c.crc32c(units[2][1].payload)],
    ]
    done: list[asyncio.Future[BaseException | None]] = []
    loop = asyncio.get_running_loop()
    for records, crcs in zip(units, given, strict=True):
        told: asyncio.Future[BaseException | None] = loop.create_future()
        assert journal.enqueue_callback_nowait(records, told.set_result, crcs)
        done.append(told)
    assert await asyncio.gather(*done) == [None, None, None]
    await journal.close()
    assert sink.groups == [5]  # one group
    replayed = ListSink()
    await (await Journal.open(tmp_path, replayed)).close()
    assert replayed.records == [record for records in units for record in records]


def _segment(directory: Path) -> Path:
    return directory / f"{list_segments(directory)[-1]:08d}.log"


def _write_at(path: Path, offset: int, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, data, offset)
    finally:
        os.close(fd)


async def test_small_groups_are_written_over_zeros_and_replay_after_a_crash(
    tmp_path: Path,
) -> None:
    """With sync on, the writer keeps the segment zero-filled ahead of its last record while
    groups are small, so each group overwrites blocks the file has (a sync without metadata).
    What a kill -9 leaves then has zeros after the last record: replay reads every record,
    drops the zeros as the fill they are (not as a torn record), and the journal goes on."""
    live = tmp_path / "live"
    journal = await Journal.open(live, ListSink(), JournalConfig(prealloc_bytes=16 * 1024))
    records = [add(1, i, bytes([i]) * 300) for i in range(120)]  # ~40 KiB: fills
    for record in records:
        await journal.append(record)
    # A group goes over the zeros: the file grows by the fills alone, never by a record.
    for i in range(120, 160):
        size, filled = _segment(live).stat().st_size, journal.stats.prefilled_bytes
        records.append(add(1, i, b"e" * 100))
        await journal.append(records[-1])
        assert _segment(live).stat().st_size - size == journal.stats.prefilled_bytes - filled
    # Every append returned, so every write returned (O_DSYNC), and the writer waits for the
    # next record: the files now are what a kill -9 would leave.
    crashed = tmp_path / "crashed"
    shutil.copytree(live, crashed)
    assert _segment(crashed).stat().st_size > framed_size(records)
    assert journal.stats.prefilled_bytes >= 3 * 16 * 1024
    await journal.close()
    assert _segment(live).stat().st_size == framed_size(records)  # a clean close cuts them

    replayed = ListSink()
    with capture_logs() as logs:
        journal2 = await Journal.open(crashed, replayed)
    assert replayed.records == records
    events = [entry["event"] for entry in logs]
    assert "journal_zero_tail_truncated" in events
    assert "journal_torn_tail_truncated" not in events
    await journal2.append(add(1, 999))
    await journal2.close()
    again = ListSink()  # the mark moved past the replayed records: only the new one
    journal3 = await Journal.open(crashed, again)
    await journal3.close()
    assert again.records == [add(1, 999)]


async def test_a_torn_record_over_the_zeros_is_still_a_torn_tail(tmp_path: Path) -> None:
    live = tmp_path / "live"
    journal = await Journal.open(live, ListSink(), JournalConfig(prealloc_bytes=16 * 1024))
    records = [add(2, i, b"t" * 200) for i in range(10)]
    for record in records:
        await journal.append(record)
    crashed = tmp_path / "crashed"
    shutil.copytree(live, crashed)
    await journal.close()
    # A crash in the middle of the next group's write: its first bytes reached the zeros.
    torn = b"".join(frame_records([add(2, 10, b"t" * 200)])[0])[:100]
    _write_at(_segment(crashed), framed_size(records), torn)
    replayed = ListSink()
    with capture_logs() as logs:
        journal2 = await Journal.open(crashed, replayed)
    await journal2.close()
    assert replayed.records == records
    assert "journal_torn_tail_truncated" in [entry["event"] for entry in logs]


async def test_big_groups_and_sync_off_append_without_zeros(tmp_path: Path) -> None:
    config = JournalConfig(prealloc_bytes=16 * 1024, prealloc_max_group_bytes=4096)
    journal = await Journal.open(tmp_path / "big", ListSink(), config)
    await journal.append(add(1, 0, b"b" * 100))  # the journal's first group: no fill before it
    filled = journal.stats.prefilled_bytes
    await journal.append(add(1, 1, b"b" * 8192))  # a small group before it: a fill
    assert journal.stats.prefilled_bytes > filled
    filled = journal.stats.prefilled_bytes
    for i in range(2, 8):  # each after a group over the bound: no fill
        await journal.append(add(1, i, b"b" * 8192))
    assert journal.stats.prefilled_bytes == filled
    await journal.close()

    unsynced = await Journal.open(tmp_path / "nosync", ListSink(), JournalConfig(sync=False))
    for i in range(20):
        await unsynced.append(add(1, i))
    assert unsynced.stats.prefilled_bytes == 0
    await unsynced.close()


async def test_a_failed_fill_stops_the_fills_and_loses_no_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_space(fd: int, data: bytes, offset: int) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "pwrite", no_space)
    sink = ListSink()
    config = JournalConfig(prealloc_bytes=16 * 1024, direct_writes=False)  # records: write()
    journal = await Journal.open(tmp_path, sink, config)
    records = [add(1, i, b"f" * 100) for i in range(20)]
    with capture_logs() as logs:
        for record in records:
            await journal.append(record)
    await journal.close()
    assert sink.records == records
    assert [entry["event"] for entry in logs].count("journal_prefill_failed") == 1
    assert journal.stats.prefilled_bytes == 0
    replayed = ListSink()
    journal2 = await Journal.open(tmp_path, replayed)
    await journal2.close()
    assert replayed.records == records


@pytest.mark.parametrize("buffered", ["direct writes off", "O_DIRECT refused"])
async def test_synced_pages_leave_the_page_cache_behind_the_last_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, buffered: str
) -> None:
    """With sync on and buffered writes (the setting off, or the filesystem refusing
    O_DIRECT, where the journal falls back to them) the writer drops the segment's synced
    pages from the page cache a MiB at a time (BookKeeper's journalRemovePagesFromCache):
    never the page the last record ends in, nor the zeros ahead, which later writes continue
    (a dropped page there would have to be read back first). A roll-over drops the rest of the
    closed segment."""
    if buffered == "O_DIRECT refused":
        refuse_o_direct(monkeypatch)
    real_fadvise = os.posix_fadvise
    advised: list[tuple[int, int, int, int]] = []  # offset, length, advice, bytes written
    written = 0

    def spy(fd: int, offset: int, length: int, advice: int) -> None:
        advised.append((offset, length, advice, written))
        real_fadvise(fd, offset, length, advice)

    monkeypatch.setattr(os, "posix_fadvise", spy)
    config = JournalConfig(
        segment_bytes=2 << 20,
        prealloc_bytes=16 * 1024,
        direct_writes=buffered == "O_DIRECT refused",
    )
    journal = await Journal.open(tmp_path, ListSink(), config)
    assert journal._blocks is None
    records = [add(1, i, bytes([i % 256]) * 3000) for i in range(1000)]  # ~2.9 MiB
    for record in records:
        written += framed_size([record])
        await journal.append(record)
        if len(list_segments(tmp_path)) > 1:
            break
    await journal.close()

    page = os.sysconf("SC_PAGE_SIZE")
    assert all(advice == os.POSIX_FADV_DONTNEED for _, _, advice, _ in advised)
    in_segment = [(o, n, w) for o, n, _, w in advised if n]
    assert len(in_segment) >= 2
    assert in_segment[0][0] == 0
    for (offset, length, _at), (next_offset, _, _) in itertools.pairwise(in_segment):
        assert offset + length == next_offset  # one run behind the writer, no gap
    for offset, length, at in in_segment:
        assert (offset + length) % page == 0
        assert offset + length <= at - at % page  # never the last record's page
        assert length >= 1 << 20 or offset == 0
    rolled = [(o, n) for o, n, _, _ in advised if not n]
    assert rolled
    assert rolled[0][0] == in_segment[-1][0] + in_segment[-1][1]  # the rest, at the roll


async def test_without_sync_no_page_is_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    monkeypatch.setattr(os, "posix_fadvise", lambda fd, o, n, a: calls.append(o))
    for directory, config in (
        (tmp_path / "nosync", JournalConfig(sync=False)),
        (tmp_path / "off", JournalConfig(remove_pages_from_cache=False)),
    ):
        journal = await Journal.open(directory, ListSink(), config)
        for start in range(0, 800, 16):  # ~2.3 MiB
            batch = [add(1, i, b"n" * 3000) for i in range(start, start + 16)]
            await asyncio.gather(*(journal.append(r) for r in batch))
        await journal.close()
    assert calls == []


@pytest.mark.skipif(not HAVE_FINCORE, reason="fincore (util-linux) is missing")
async def test_the_dropped_pages_are_really_out_of_the_page_cache(tmp_path: Path) -> None:
    if not drops_pages(tmp_path):
        pytest.skip("this filesystem keeps dropped pages (tmpfs)")
    journal = await Journal.open(tmp_path / "j", ListSink())
    for start in range(0, 1200, 16):  # ~3.5 MiB in groups of up to 16 (~48 KiB)
        await asyncio.gather(
            *(journal.append(add(1, i, b"r" * 3000)) for i in range(start, start + 16))
        )
    segment = _segment(tmp_path / "j")
    resident = resident_bytes([segment])
    await journal.close()
    # What stays: under a MiB behind the last record, its page, and the zeros ahead.
    assert resident < (1 << 20) + 2 * JournalConfig().prealloc_bytes
    assert segment.stat().st_size > 3 << 20


def _segment_bytes(directory: Path) -> list[bytes]:
    return [segment_path(directory, n).read_bytes() for n in list_segments(directory)]


async def test_direct_and_buffered_writes_leave_the_same_segments(tmp_path: Path) -> None:
    """The same appends through O_DIRECT block writes and through buffered writes: groups that
    end mid-block and on a boundary, one too big for the zero-fill (the block writer pads it
    with zeros itself), a roll-over. The closed segments are byte for byte the same, and a
    replay of each gives every record back."""
    if not supports_direct_io(tmp_path):
        pytest.skip("this filesystem refuses O_DIRECT")
    sizes = [10, 4000, 4096 - 8 - 31 - 2, 1, 100_000, 3, 70_000, 5000, 0, 200]
    records = [add(1, i, os.urandom(size)) for i, size in enumerate(sizes * 3)]
    directories = {True: tmp_path / "direct", False: tmp_path / "buffered"}
    for direct, directory in directories.items():
        config = JournalConfig(segment_bytes=256 * 1024, prealloc_bytes=16 * 1024)
        journal = await Journal.open(directory, ListSink(), replace(config, direct_writes=direct))
        assert (journal._blocks is not None) == direct
        for record in records:
            await journal.append(record)
        await journal.close()
    assert len(list_segments(directories[True])) > 1  # it rolled over
    assert _segment_bytes(directories[True]) == _segment_bytes(directories[False])
    for directory in directories.values():
        replayed = ListSink()
        await (await Journal.open(directory, replayed)).close()
        assert replayed.records == records


async def test_a_filesystem_without_o_direct_gets_buffered_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where O_DIRECT is refused (EINVAL at open), the journal says so once and writes
    buffered: every record is acknowledged and replays."""
    refuse_o_direct(monkeypatch)
    with capture_logs() as logs:
        journal = await Journal.open(tmp_path, ListSink(), JournalConfig(segment_bytes=64 * 1024))
        records = [add(1, i, b"n" * 5000) for i in range(30)]  # rolls over: still buffered
        for record in records:
            await journal.append(record)
        await journal.close()
    events = [entry["event"] for entry in logs]
    assert events.count("journal_direct_writes_unsupported") == 1
    replayed = ListSink()
    await (await Journal.open(tmp_path, replayed)).close()
    assert replayed.records == records


async def test_a_zero_fill_of_a_size_between_blocks_still_goes_out_direct(tmp_path: Path) -> None:
    """The zero-fill's size need not be a multiple of the block (``journal_prealloc_kbytes``
    of a 4 KiB-sector disk, or any byte count here): with direct writes each fill is rounded up
    to whole blocks (the device refuses a partial one), and the records over the zeros
    replay."""
    if not supports_direct_io(tmp_path):
        pytest.skip("this filesystem refuses O_DIRECT")
    config = JournalConfig(prealloc_bytes=10 * 1024 + 100)
    records = [add(1, i, b"z" * 700) for i in range(40)]
    with capture_logs() as logs:
        journal = await Journal.open(tmp_path, ListSink(), config)
        assert journal._blocks is not None
        for record in records:
            await journal.append(record)
        await journal.close()
    assert "journal_prefill_failed" not in [entry["event"] for entry in logs]
    assert journal.stats.prefilled_bytes > 0
    assert journal.stats.prefilled_bytes % 4096 == 0
    replayed = ListSink()
    await (await Journal.open(tmp_path, replayed)).close()
    assert replayed.records == records
