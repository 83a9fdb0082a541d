"""Entry logs written O_DIRECT behind the appends: the same files as buffered appends, reads
from the buffers before the write-out, a failed write-out, a crash, the buffered fallback."""

from __future__ import annotations

import errno
import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from magnetar.bookie import entry_log
from magnetar.bookie.entry_log import EntryLocation, EntryLog
from tests.kit.page_cache import refuse_o_direct, supports_direct_io


@pytest.fixture(autouse=True)
def _direct_io(tmp_path: Path) -> None:
    if not supports_direct_io(tmp_path):
        pytest.skip("this filesystem refuses O_DIRECT")


def payload(ledger: int, entry: int, size: int) -> bytes:
    return bytes([(ledger * 31 + entry) % 251]) * size


def _wait_for(condition: object, what: str) -> None:
    deadline = time.monotonic() + 10
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.005)


def test_direct_and_buffered_appends_leave_the_same_logs(tmp_path: Path) -> None:
    """The same appends both ways: records that end mid-block and on a boundary, one bigger
    than the write-behind buffer, hand-offs and roll-overs. Every entry reads back while the
    log is open (some from the buffers), the closed logs are byte for byte the same, and each
    reopened log reads every entry back."""
    sizes = [0, 1, 4000, 4096 - 24, 100_000, 5000, 3, 9 << 20, 70_000, 200]
    appends = [
        [(1, i * 2 + j, payload(1, i * 2 + j, n)) for j in range(2)] for i, n in enumerate(sizes)
    ]
    locations: dict[bool, list[EntryLocation]] = {}
    for direct in (True, False):
        elog = EntryLog(
            tmp_path / str(direct),
            roll_bytes=64 * 1024,
            writeback_bytes=16 * 1024,
            direct_writes=direct,
        )
        try:
            assert (elog._behind is not None) == direct
            found = locations[direct] = []
            for entries in appends:
                found += elog.append(entries)
                for (ledger, entry, data), location in zip(entries, found[-2:], strict=True):
                    assert elog.read(ledger, entry, location) == data
        finally:
            elog.close()
    assert locations[True] == locations[False]
    assert len({location.log_id for location in locations[True]}) > 3  # it rolled over
    names = sorted(p.name for p in (tmp_path / "True").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "False").iterdir())
    for name in names:
        assert (tmp_path / "True" / name).read_bytes() == (tmp_path / "False" / name).read_bytes()
    reopened = EntryLog(tmp_path / "True", direct_writes=True)
    try:
        entries = [entry for group in appends for entry in group]
        for (ledger, entry, data), location in zip(entries, locations[True], strict=True):
            assert reopened.read(ledger, entry, location) == data
    finally:
        reopened.close()


def test_entries_read_back_from_the_buffers_before_and_during_their_write_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Until the writeback thread has written them, appended entries are in no file: reads
    copy them from the buffers, the one being written included (held here), and one read
    can span the file, that buffer and the active one."""
    real_pwrite = os.pwrite
    entered, release = threading.Event(), threading.Event()

    def held(fd: int, data: bytes | memoryview, offset: int) -> int:
        if threading.current_thread().name == "entry-log-writeback":
            entered.set()
            release.wait(10)
        return real_pwrite(fd, data, offset)

    elog = EntryLog(tmp_path, writeback_bytes=64 * 1024, direct_writes=True)
    log_path = tmp_path / "00000001.log"
    try:
        (small,) = elog.append([(1, 0, payload(1, 0, 3000))])
        assert log_path.stat().st_size == 0  # below writeback_bytes: only in the buffer
        assert elog.read(1, 0, small) == payload(1, 0, 3000)
        elog.sync()  # written out (by the syncing thread) and synced
        assert log_path.stat().st_size == 4096
        monkeypatch.setattr(os, "pwrite", held)
        big = elog.append([(1, 1, payload(1, 1, 70_000))])  # handed off: the thread writes it
        assert entered.wait(5)
        later = elog.append([(1, 2, payload(1, 2, 1000)), (1, 3, payload(1, 3, 20))])
        assert log_path.stat().st_size == 4096  # the write-out is held
        wanted = [(1, 0, small), (1, 1, big[0]), (1, 2, later[0]), (1, 3, later[1])]
        expected = [
            payload(1, 0, 3000),
            payload(1, 1, 70_000),
            payload(1, 2, 1000),
            payload(1, 3, 20),
        ]
        assert elog.read_many(wanted) == expected  # one span: file, out buffer, active buffer
        release.set()
        elog.sync()
        assert elog.read_many(wanted) == expected
    finally:
        release.set()
        elog.close()
    assert log_path.stat().st_size == later[1].offset + 24 + 20  # cut to its last record


def test_a_failed_write_out_fails_the_next_append_and_sync_but_reads_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write-out the device refuses (the disk is full) is logged once and raised by every
    later append and sync, so the journal keeps what it holds and takes no more; the bytes it
    could not write stay in memory and every entry still reads back."""

    def full(fd: int, data: bytes | memoryview, offset: int) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    elog = EntryLog(tmp_path, writeback_bytes=64 * 1024, direct_writes=True)
    monkeypatch.setattr(os, "pwrite", full)
    with capture_logs() as logs:
        (first,) = elog.append([(1, 0, payload(1, 0, 100_000))])
        _wait_for(lambda: elog._behind_error is not None, "the write-out failed")
        with pytest.raises(OSError, match="No space"):
            elog.append([(1, 1, payload(1, 1, 10))])
        with pytest.raises(OSError, match="No space"):
            elog.sync()
    assert [entry["event"] for entry in logs].count("entry_log_write_failed") == 1
    assert elog.read(1, 0, first) == payload(1, 0, 100_000)
    monkeypatch.undo()
    with pytest.raises(OSError, match="No space"):
        elog.close()  # sticky: nothing after a failed write-out is taken as written


_CHILD = """
import os, sys
from pathlib import Path
from magnetar.bookie.entry_log import EntryLog
elog = EntryLog(Path(sys.argv[1]), writeback_bytes=64 * 1024, direct_writes=True)
for e in range(200):
    elog.append([(7, e, bytes([e % 251]) * 3000)])
    if e == 99:
        elog.sync()
        print("synced", flush=True)
os._exit(0)  # no close: what was not written out is lost, as in a kill -9
"""


def test_a_crash_keeps_every_synced_entry_and_the_zeros_end_the_log(tmp_path: Path) -> None:
    """A process that stops without closing leaves the current log with the last write-out's
    zeros after its records: the next open scans it up to there, and every entry appended
    before the sync reads back (the journal holds the rest until a sync)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=True,
    )
    assert done.stdout.strip() == "synced"
    size = (tmp_path / "00000001.log").stat().st_size
    assert size % 4096 == 0  # the write-outs' zeros are still there
    elog = EntryLog(tmp_path, direct_writes=True)
    try:
        scanned = {entry.entry_id: bytes(entry.payload) for entry in elog.scan(1)}
        assert set(range(100)) <= set(scanned)
        assert all(data == bytes([e % 251]) * 3000 for e, data in scanned.items())
        assert sorted(scanned) == list(range(len(scanned)))  # a prefix: no hole
        assert sum(elog.sealed_usage()[1].values()) == len(scanned) * (24 + 3000)
    finally:
        elog.close()


def test_a_filesystem_without_o_direct_gets_buffered_appends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refuse_o_direct(monkeypatch)
    with capture_logs() as logs:
        elog = EntryLog(tmp_path, roll_bytes=64 * 1024, direct_writes=True)
        try:
            assert elog._behind is None
            locations = [elog.append([(2, e, payload(2, e, 5000))])[0] for e in range(30)]
            for e, location in enumerate(locations):
                assert elog.read(2, e, location) == payload(2, e, 5000)
        finally:
            elog.close()
    events = [entry["event"] for entry in logs]
    assert events.count("entry_log_direct_writes_unsupported") == 1
    assert not [name for name in os.listdir(tmp_path) if name.endswith(".removed")]


@pytest.mark.parametrize("seed", [1729, 4104, 13832])
def test_appends_reads_and_syncs_from_several_threads_agree(
    tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two appenders (the journal's writer and a compaction; hand-offs every 16 KiB, buffers
    of 64 KiB, so that an append often waits for a write-out, a roll-over every 256 KiB), a
    reader of random entries already appended and a thread syncing, all at once: every
    location an append returns holds its entry, every read returns it while they run, and
    after the close every entry reads back from the files."""
    monkeypatch.setattr(entry_log, "_BEHIND_BYTES", 64 * 1024)
    elog = EntryLog(tmp_path, roll_bytes=256 * 1024, writeback_bytes=16 * 1024, direct_writes=True)
    rng = random.Random(seed)
    sizes = {
        ledger: [rng.choice([0, 1, 100, 4000, 4096, 5000, 20_000, 70_000]) for _ in range(300)]
        for ledger in (3, 4)
    }
    appended: list[tuple[int, int, EntryLocation]] = []
    lock = threading.Lock()
    errors: list[BaseException] = []
    finished = threading.Event()

    def appender(ledger: int) -> None:
        try:
            for entry, size in enumerate(sizes[ledger]):
                (location,) = elog.append([(ledger, entry, payload(ledger, entry, size))])
                with lock:
                    appended.append((ledger, entry, location))
        except BaseException as exc:  # reported by the test below
            errors.append(exc)

    def reader() -> None:
        pick = random.Random(7)
        try:
            while not finished.is_set():
                with lock:
                    if not appended:
                        continue
                    chosen = sorted(
                        (appended[pick.randrange(len(appended))] for _ in range(3)),
                        key=lambda c: (c[2].log_id, c[2].offset),
                    )
                got = elog.read_many(chosen)
                assert got == [payload(ledger, e, loc.length) for ledger, e, loc in chosen]
        except BaseException as exc:
            errors.append(exc)

    def syncer() -> None:
        try:
            while not finished.is_set():
                elog.sync()
                time.sleep(0.001)
        except BaseException as exc:
            errors.append(exc)

    appenders = [threading.Thread(target=appender, args=(ledger,)) for ledger in (3, 4)]
    others = [threading.Thread(target=reader), threading.Thread(target=syncer)]
    for thread in others + appenders:
        thread.start()
    try:
        for thread in appenders:
            thread.join(60)
    finally:
        finished.set()
        for thread in others:
            thread.join(10)
        elog.close()
    assert not errors, errors[0]
    assert len(appended) == 600
    assert len({location.log_id for _, _, location in appended}) > 10  # it rolled over
    reopened = EntryLog(tmp_path, direct_writes=True)
    try:
        for ledger, entry, location in appended:
            assert reopened.read(ledger, entry, location) == payload(ledger, entry, location.length)
    finally:
        reopened.close()


def test_a_sync_writes_out_what_was_appended_before_it_not_what_keeps_coming(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An appender that adds a record during every write-out of a sync (while the sync lets
    the entry log's lock go): the sync ends after writing out what was there when it was
    called, instead of chasing the new records, and every record reads back."""
    elog = EntryLog(tmp_path, writeback_bytes=1 << 30, direct_writes=True)  # no hand-offs
    real_pwrite = os.pwrite
    write_outs = 0
    appended: list[tuple[int, EntryLocation]] = []

    def appending_pwrite(fd: int, data: bytes | memoryview, offset: int) -> int:
        nonlocal write_outs
        write_outs += 1
        written = real_pwrite(fd, data, offset)
        if write_outs < 50:
            entry = len(appended) + 1
            appended.append((entry, elog.append([(5, entry, payload(5, entry, 5000))])[0]))
        return written

    try:
        (first,) = elog.append([(5, 0, payload(5, 0, 5000))])
        monkeypatch.setattr(os, "pwrite", appending_pwrite)
        elog.sync()
        assert write_outs == 1  # the records appended meanwhile wait for the next one
        monkeypatch.undo()
        for entry, location in [(0, first), *appended]:
            assert elog.read(5, entry, location) == payload(5, entry, 5000)
    finally:
        elog.close()
