"""Entry logs: appends and reads, rollover, summaries, torn tails, corruption, writeback."""

from __future__ import annotations

import errno
import os
import threading
import time
from pathlib import Path

import crc32c
import pytest

from magnetar.bookie import entry_log, fileio
from magnetar.bookie.entry_log import EntryLocation, EntryLog
from magnetar.bookie.errors import StorageCorrupt
from magnetar.bookie.journal_record import JournalRecord, RecordKind
from magnetar.bookie.log_records import RECORD_HEAD_SIZE
from magnetar.checksum import COMBINE_FROM
from tests.kit.page_cache import HAVE_FINCORE, drops_pages, resident_bytes


def payload(ledger: int, entry: int, size: int = 100) -> bytes:
    return bytes([(ledger * 31 + entry) % 251]) * size


def test_append_read_and_rollover(tmp_path: Path) -> None:
    elog = EntryLog(tmp_path, roll_bytes=1000)
    try:
        written = {}
        for entry in range(30):
            for ledger in (1, 2):
                (loc,) = elog.append([(ledger, entry, payload(ledger, entry))])
                written[(ledger, entry)] = loc
        assert len({loc.log_id for loc in written.values()}) > 3  # rolled over
        for (ledger, entry), loc in written.items():
            assert elog.read(ledger, entry, loc) == payload(ledger, entry)
        wanted = [(ledger, entry, loc) for (ledger, entry), loc in sorted(written.items())]
        assert elog.read_many(wanted) == [payload(lg, e) for lg, e, _ in wanted]
    finally:
        elog.close()


def test_read_many_coalesces_but_keeps_order_and_skips(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Records close together in one log come from one pread; a step backwards, another log
    or a gap past the slack (64 KiB) starts a new one."""
    elog = EntryLog(tmp_path, roll_bytes=150_000)
    preads: list[tuple[int, int, int]] = []
    real_pread = elog._pread

    def counting(log_id: int, offset: int, size: int) -> bytes:
        preads.append((log_id, offset, size))
        return real_pread(log_id, offset, size)

    monkeypatch.setattr(elog, "_pread", counting)
    try:
        locs = elog.append([(7, e, payload(7, e, 10 + e)) for e in range(50)])
        picked = [(7, e, locs[e]) for e in (0, 1, 2, 5, 9, 10, 40, 3)]  # gaps, then backwards
        assert elog.read_many(picked) == [payload(7, e, 10 + e) for _, e, _ in picked]
        assert len(preads) == 2  # 0..40 in one span, then 3
        far = elog.append([(8, e, payload(8, e, 40_000)) for e in range(4)])  # same log, big
        preads.clear()
        wanted = [(8, 0, far[0]), (8, 3, far[3])]  # 80 kB apart: past the slack
        assert elog.read_many(wanted) == [payload(8, 0, 40_000), payload(8, 3, 40_000)]
        assert len(preads) == 2
        other = elog.append([(9, 0, b"n")])  # the log is past roll_bytes: a new one
        assert other[0].log_id != far[0].log_id
        preads.clear()
        assert elog.read_many([(8, 3, far[3]), (9, 0, other[0])]) == [payload(8, 3, 40_000), b"n"]
        assert [log_id for log_id, _, _ in preads] == [far[3].log_id, other[0].log_id]
    finally:
        elog.close()


def test_reopen_seals_and_summarizes(tmp_path: Path) -> None:
    elog = EntryLog(tmp_path)
    loc_a = elog.append([(1, 0, b"a" * 10), (2, 0, b"b" * 20), (1, 1, b"c" * 30)])
    first = elog.current_log
    assert elog.sealed_usage() == {}  # the current log is not GC's to touch
    elog.close()
    elog = EntryLog(tmp_path)
    try:
        assert elog.current_log == first + 1  # never appends to a log of an earlier run
        usage = elog.sealed_usage()
        assert usage == {first: {1: 2 * 24 + 40, 2: 24 + 20}}
        assert elog.read(2, 0, loc_a[1]) == b"b" * 20
    finally:
        elog.close()


def test_torn_tail_is_not_counted_after_a_crash(tmp_path: Path) -> None:
    """A log whose summary was never written (the process died) is scanned at open; the scan
    stops at a half-written record."""
    elog = EntryLog(tmp_path)
    elog.append([(1, e, payload(1, e)) for e in range(5)])
    log_id = elog.current_log
    elog.close()
    path = tmp_path / f"{log_id:08d}.log"
    (tmp_path / f"{log_id:08d}.ledgers").unlink()
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) - 50)  # the last record loses its end
    with open(path, "ab") as f:
        f.write(bytes(4096))  # and a zeroed tail after it, as a crash can leave
    elog = EntryLog(tmp_path)
    try:
        assert elog.sealed_usage() == {log_id: {1: 4 * 124}}
        assert [s.entry_id for s in elog.scan(log_id)] == [0, 1, 2, 3]
    finally:
        elog.close()


def test_a_corrupt_record_is_refused(tmp_path: Path) -> None:
    elog = EntryLog(tmp_path)
    try:
        (loc,) = elog.append([(3, 9, b"x" * 64)])
        elog.sync()
        path = tmp_path / f"{loc.log_id:08d}.log"
        data = bytearray(path.read_bytes())
        data[loc.offset + 24 + 10] ^= 0xFF
        path.write_bytes(bytes(data))
        with pytest.raises(StorageCorrupt, match="3:9"):
            elog.read(3, 9, loc)
        with pytest.raises(StorageCorrupt, match="does not match"):
            elog.read(3, 8, loc)  # the index names another entry than the record holds
        with pytest.raises(StorageCorrupt, match="missing"):
            elog.read(3, 9, EntryLocation(loc.log_id + 100, 0, 64))
    finally:
        elog.close()


def test_remove_only_sealed_logs_and_readers_finish(tmp_path: Path) -> None:
    elog = EntryLog(tmp_path)
    (loc,) = elog.append([(1, 0, b"z" * 8)])
    elog.close()
    elog = EntryLog(tmp_path)
    try:
        with pytest.raises(ValueError, match="not sealed"):
            elog.remove(elog.current_log)
        assert elog.read(1, 0, loc) == b"z" * 8  # opens a read fd for the log
        elog.remove(loc.log_id)
        assert not (tmp_path / f"{loc.log_id:08d}.log").exists()
        assert not (tmp_path / f"{loc.log_id:08d}.ledgers").exists()
        with pytest.raises(StorageCorrupt, match="missing"):
            elog.read(1, 0, loc)
    finally:
        elog.close()


def test_a_removal_cut_short_by_a_stop_is_finished_by_the_next_open(tmp_path: Path) -> None:
    # A stop must not wait for a big log's gradual removal: the log is renamed out of the way
    # first, the shrinking gives up, and the next open unlinks what is left.
    elog = EntryLog(tmp_path)
    (loc,) = elog.append([(1, 0, b"z" * (9 << 20))])  # a few removal steps long
    elog.close()
    elog = EntryLog(tmp_path)
    stop = threading.Event()
    stop.set()
    try:
        elog.remove(loc.log_id, stop=stop)
        assert loc.log_id not in elog.sealed_usage()
        assert not (tmp_path / f"{loc.log_id:08d}.log").exists()
        left = tmp_path / f"{loc.log_id:08d}.log.removed"
        assert left.exists()
    finally:
        elog.close()
    elog = EntryLog(tmp_path)
    try:
        assert not left.exists()
        assert loc.log_id not in elog.list_logs()
        assert loc.log_id not in elog.sealed_usage()
    finally:
        elog.close()


def test_writeback_starts_as_the_current_log_grows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Dirty pages are sent to disk every writeback_bytes, by the writeback thread, not left
    for one big sync (or the kernel) to write at once."""
    started: list[tuple[str, int]] = []

    def recording(fd: int) -> None:
        started.append((threading.current_thread().name, os.fstat(fd).st_size))
        fileio.start_writeback(fd)

    monkeypatch.setattr(entry_log, "start_writeback", recording)
    elog = EntryLog(tmp_path, writeback_bytes=64 * 1024)
    try:
        elog.append([(1, e, b"w" * 1000) for e in range(10)])
        time.sleep(0.2)
        assert started == []  # 10 kB: below the threshold
        elog.append([(1, e, b"w" * 1000) for e in range(10, 80)])
        deadline = time.monotonic() + 5
        while not started and time.monotonic() < deadline:
            time.sleep(0.01)
        assert started == [("entry-log-writeback", 80 * 1024)]
    finally:
        elog.close()


def test_read_fds_are_bounded(tmp_path: Path) -> None:
    """A bookie with thousands of logs must not keep a read fd open for each one."""
    elog = EntryLog(tmp_path, roll_bytes=1)  # every append starts a new log
    try:
        locs = [elog.append([(1, e, payload(1, e))])[0] for e in range(100)]
        assert len({loc.log_id for loc in locs}) == 100
        before = len(os.listdir("/proc/self/fd"))
        for e, loc in enumerate(locs):
            assert elog.read(1, e, loc) == payload(1, e)
        assert len(os.listdir("/proc/self/fd")) - before <= 64
        assert elog.read(1, 0, locs[0]) == payload(1, 0)  # its fd was closed: opened again
    finally:
        elog.close()


def test_a_failed_write_does_not_shift_later_locations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elog = EntryLog(tmp_path)
    try:
        (first,) = elog.append([(1, 0, b"a" * 100)])

        def half_then_full(fd: int, parts: list[bytes], total: int = -1) -> int:
            data = b"".join(parts)
            os.write(fd, data[: len(data) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(entry_log, "write_all", half_then_full)
        with pytest.raises(OSError, match="No space"):
            elog.append([(1, 1, b"b" * 100)])
        monkeypatch.undo()
        (third,) = elog.append([(1, 2, b"c" * 100)])
        assert elog.read(1, 2, third) == b"c" * 100
        assert elog.read(1, 0, first) == b"a" * 100
    finally:
        elog.close()


def test_a_log_that_cannot_be_created_leaves_the_current_one_in_use(tmp_path: Path) -> None:
    elog = EntryLog(tmp_path, roll_bytes=1)
    (first,) = elog.append([(1, 0, b"a" * 10)])
    blocker = tmp_path / f"{first.log_id + 1:08d}.log"
    blocker.write_bytes(b"")  # the next log's name is taken: creating it fails
    with pytest.raises(FileExistsError):
        elog.append([(1, 1, b"b" * 10)])
    blocker.unlink()
    (second,) = elog.append([(1, 1, b"b" * 10)])
    assert second.log_id == first.log_id + 1
    elog.sync()
    elog.close()
    elog = EntryLog(tmp_path)
    try:
        assert elog.read(1, 0, first) == b"a" * 10
        assert elog.read(1, 1, second) == b"b" * 10
    finally:
        elog.close()


def test_append_records_lays_records_back_to_back_like_append(tmp_path: Path) -> None:
    """The journal writer's append (records in, first offset out) writes what ``append``
    writes: each record's location follows from the first offset and the payload lengths,
    reads check them, and the bytes per ledger are counted for GC."""
    elog = EntryLog(tmp_path)
    try:
        (before,) = elog.append([(9, 0, b"z" * 5)])
        records = [
            JournalRecord(RecordKind.ADD, 1, i, i - 1, 0, b"mk", bytes([i]) * (10 + i))
            for i in range(4)
        ] + [JournalRecord(RecordKind.ADD, 2, 0, -1, 0, b"mk", b"")]
        log_id, offset = elog.append_records(records)
        assert (log_id, offset) == (before.log_id, before.offset + RECORD_HEAD_SIZE + 5)
        for record in records:
            location = EntryLocation(log_id, offset, len(record.payload))
            assert elog.read(record.ledger_id, record.entry_id, location) == record.payload
            offset += RECORD_HEAD_SIZE + len(record.payload)
    finally:
        elog.close()
    reopened = EntryLog(tmp_path)  # seals the log: its bytes per ledger are on disk now
    try:
        usage = reopened.sealed_usage()[log_id]
        assert usage == {9: RECORD_HEAD_SIZE + 5, 1: 4 * RECORD_HEAD_SIZE + 46, 2: RECORD_HEAD_SIZE}
    finally:
        reopened.close()


def test_append_records_writes_only_the_adds_of_a_mixed_group(tmp_path: Path) -> None:
    """A group with fences and deletes among its adds: only the adds get log records, back to
    back, each checked against its own payload checksum (the checksums run parallel to every
    record, not just the adds); a group without an add writes nothing."""
    payloads = [b"a" * 7, os.urandom(COMBINE_FROM + 1), b"c" * 3]
    records = [
        JournalRecord(RecordKind.FENCE, 4, master_key=b"mk"),
        JournalRecord(RecordKind.ADD, 4, 0, -1, 0, b"mk", payloads[0]),
        JournalRecord(RecordKind.DELETE, 8),
        JournalRecord(RecordKind.ADD, 4, 1, 0, 0, b"mk", payloads[1]),
        JournalRecord(RecordKind.ADD, 5, 0, -1, 0, b"mk", payloads[2]),
        JournalRecord(RecordKind.FENCE, 5, master_key=b"mk"),
    ]
    crcs = [-1, -1, -1, crc32c.crc32c(payloads[1]), -1, -1]
    elog = EntryLog(tmp_path)
    try:
        assert elog.append_records([JournalRecord(RecordKind.DELETE, 8)]) == (-1, 0)
        log_id, offset = elog.append_records(records, crcs)
        assert offset == 0
        for record in records:
            if record.kind is not RecordKind.ADD:
                continue
            location = EntryLocation(log_id, offset, len(record.payload))
            assert elog.read(record.ledger_id, record.entry_id, location) == record.payload
            offset += RECORD_HEAD_SIZE + len(record.payload)
        assert elog.append([(9, 0, b"z")])[0].offset == offset  # nothing else was written
    finally:
        elog.close()


def test_append_records_with_payload_checksums_writes_the_same_records(tmp_path: Path) -> None:
    """Given the journal's payload checksums, the records' checksums are combined from them
    instead of read from the payloads again: the same bytes on disk, and each reads back
    checked. A checksum that does not belong to its payload makes its record fail to read."""
    payloads = [b"", b"s" * 100, os.urandom(COMBINE_FROM), os.urandom(300_000)]
    records = [
        JournalRecord(RecordKind.ADD, 3, i, i - 1, 0, b"mk", payload)
        for i, payload in enumerate(payloads)
    ]
    crcs = [crc32c.crc32c(p) if len(p) >= COMBINE_FROM else -1 for p in payloads]
    plain, combined, wrong = (EntryLog(tmp_path / name) for name in ("plain", "combined", "wrong"))
    try:
        plain.append_records(records)
        log_id, offset = combined.append_records(records, crcs)
        wrong.append_records(records, [*crcs[:-1], crcs[-1] ^ 1])
        for elog in (plain, combined, wrong):
            elog.sync()
        for record in records:
            location = EntryLocation(log_id, offset, len(record.payload))
            assert combined.read(3, record.entry_id, location) == record.payload
            offset += RECORD_HEAD_SIZE + len(record.payload)
        with pytest.raises(StorageCorrupt):
            wrong.read(3, 3, location)
    finally:
        for elog in (plain, combined, wrong):
            elog.close()
    plain_bytes = [p.read_bytes() for p in sorted((tmp_path / "plain").iterdir())]
    combined_bytes = [p.read_bytes() for p in sorted((tmp_path / "combined").iterdir())]
    assert plain_bytes == combined_bytes


@pytest.mark.skipif(not HAVE_FINCORE, reason="fincore (util-linux) is missing")
def test_only_the_last_page_cache_bytes_stay_cached_and_every_entry_reads_back(
    tmp_path: Path,
) -> None:
    if not drops_pages(tmp_path):
        pytest.skip("this filesystem keeps dropped pages (tmpfs)")
    logs = tmp_path / "logs"
    window = 2 << 20
    elog = EntryLog(logs, roll_bytes=4 << 20, writeback_bytes=256 << 10, page_cache_bytes=window)
    payloads = [bytes([i % 251]) * (64 << 10) for i in range(192)]  # 12 MiB over three logs
    locations: list[EntryLocation] = []
    for i, payload in enumerate(payloads):
        locations += elog.append([(1, i, payload)])
    elog.sync()  # everything clean: what is behind the window can go
    elog.append([(2, 0, b"k" * (256 << 10))])  # a writeback step, and the trim after it
    deadline = time.monotonic() + 10
    while resident_bytes(logs.glob("*.log")) > window + (1 << 20) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert resident_bytes(logs.glob("*.log")) <= window + (1 << 20)
    # Dropped pages are only out of memory: every entry reads back from the disk.
    for i, (payload, location) in enumerate(zip(payloads, locations, strict=True)):
        assert elog.read(1, i, location) == payload
    elog.close()


@pytest.mark.skipif(not HAVE_FINCORE, reason="fincore (util-linux) is missing")
def test_a_sealed_log_not_yet_synced_leaves_the_page_cache_too(tmp_path: Path) -> None:
    """A log that rolled over and was not synced yet is written back and dropped like the
    current one: its pages do not wait for the next sync (the clean-clone CI run met one,
    under load, that stayed cached whole: no writeback step had run while it was current)."""
    if not drops_pages(tmp_path):
        pytest.skip("this filesystem keeps dropped pages (tmpfs)")
    logs = tmp_path / "logs"
    window = 1 << 20
    # No writeback step until 6 MiB are written: the first log is sealed with every page cached.
    elog = EntryLog(logs, roll_bytes=4 << 20, writeback_bytes=6 << 20, page_cache_bytes=window)
    for i in range(96):  # 6 MiB: a full first log, then the second
        elog.append([(1, i, b"s" * (64 << 10))])
    deadline = time.monotonic() + 10
    while resident_bytes(logs.glob("*.log")) > window + (1 << 20) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert resident_bytes(logs.glob("*.log")) <= window + (1 << 20)
    elog.close()


@pytest.mark.skipif(not HAVE_FINCORE, reason="fincore (util-linux) is missing")
def test_page_cache_bytes_0_keeps_every_page(tmp_path: Path) -> None:
    if not drops_pages(tmp_path):
        pytest.skip("this filesystem keeps dropped pages (tmpfs)")
    logs = tmp_path / "logs"
    elog = EntryLog(logs, roll_bytes=4 << 20, writeback_bytes=256 << 10, page_cache_bytes=0)
    for i in range(96):  # 6 MiB
        elog.append([(1, i, b"z" * (64 << 10))])
    elog.sync()
    elog.append([(2, 0, b"k" * (256 << 10))])
    time.sleep(0.3)
    assert resident_bytes(logs.glob("*.log")) >= 6 << 20
    elog.close()
