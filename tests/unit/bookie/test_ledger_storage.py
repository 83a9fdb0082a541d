"""Ledger storage: idempotent apply, meta, ranges, GC and compaction, reopen."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from magnetar.bookie import ledger_storage
from magnetar.bookie.entry_log import EntryLog
from magnetar.bookie.errors import StorageCorrupt, StorageUnavailable
from magnetar.bookie.journal import Journal
from magnetar.bookie.journal_record import JournalRecord, RecordKind
from magnetar.bookie.ledger_storage import CompactionResult, LedgerMeta, LedgerStorage


def add(ledger: int, entry: int, payload: bytes = b"v", lac: int = -1) -> JournalRecord:
    return JournalRecord(RecordKind.ADD, ledger, entry, lac, 77, b"mk", payload)


def test_meta_round_trip() -> None:
    meta = LedgerMeta(master_key=b"\x00k", fenced=True, deleted=False, collected=True, lac=-1)
    assert LedgerMeta.decode(meta.encode()) == meta


def test_apply_is_idempotent_and_survives_reopen(tmp_path: Path) -> None:
    storage = LedgerStorage(tmp_path)
    records = [add(1, i, bytes([i]), lac=i - 1) for i in range(5)]
    records.append(JournalRecord(RecordKind.FENCE, 1, master_key=b"mk"))
    storage.apply(records)
    storage.apply(records)  # replay
    assert storage.meta(1) == LedgerMeta(master_key=b"mk", fenced=True, lac=3)
    storage.close()
    storage = LedgerStorage(tmp_path)
    try:
        assert storage.meta(1) == LedgerMeta(master_key=b"mk", fenced=True, lac=3)
        entry = storage.get_entry(1, 4)
        assert entry is not None
        assert (entry.payload, entry.digest, entry.lac) == (b"\x04", 77, 3)
        assert storage.last_entry_id(1) == 4
        assert storage.last_entry_id(2) == -1
    finally:
        storage.close()


def test_ranges_and_neighbours_do_not_mix(tmp_path: Path) -> None:
    storage = LedgerStorage(tmp_path)
    try:
        storage.apply([add(1, 0), add(1, 1), add(1, 3), add(2, 0), add(0, 9)])
        assert storage.entry_ranges(1) == [(0, 1), (3, 3)]
        assert [e.entry_id for e in storage.read_range(1, 0, 10)] == [0, 1, 3]
        assert storage.last_entry_id(1) == 3
        assert storage.last_entry_id(0) == 9
        assert storage.read_range(1, 4, 10) == []
    finally:
        storage.close()


def test_collect_only_deleted_ledgers(tmp_path: Path) -> None:
    storage = LedgerStorage(tmp_path)
    try:
        storage.apply([add(1, 0), add(1, 1), add(2, 0)])
        assert not storage.collect(1)
        storage.apply([JournalRecord(RecordKind.DELETE, 1)])
        assert storage.collect(1)
        assert storage.entry_ranges(1) == []
        assert storage.entry_ranges(2) == [(0, 0)]
        meta = storage.meta(1)
        assert meta is not None
        assert (meta.deleted, meta.collected) == (True, True)
    finally:
        storage.close()


def test_rocksdb_writes_sst_files_back_a_mib_at_a_time(tmp_path: Path) -> None:
    """bytes_per_sync reaches RocksDB (it records the options it opened with): a flush or a
    compaction is written back gradually, not as one burst in front of the journal's sync."""
    storage = LedgerStorage(tmp_path)
    storage.close()
    options = max((tmp_path / "index").glob("OPTIONS-*")).read_text()
    assert "  bytes_per_sync=1048576\n" in options


def entry_log_files(path: Path) -> list[str]:
    return sorted(p.name for p in (path / "entrylogs").glob("*.log"))


def test_compaction_removes_dead_logs_and_moves_live_entries(tmp_path: Path) -> None:
    """Ledger 1 alone fills the first logs, then 1 and 2 interleave (ledger 2 is a tenth of
    those bytes). Once 1 is deleted and collected, its own logs go and the mixed ones are
    rewritten: ledger 2 stays readable, there and after a reopen."""
    storage = LedgerStorage(tmp_path, entry_log_bytes=4000)
    try:
        for first in range(0, 20, 5):  # a log rolls over once an apply leaves it past 4000 B
            storage.apply([add(1, e, bytes([e]) * 500) for e in range(first, first + 5)])
        mixed = []
        for e in range(20):
            mixed += [add(1, 20 + e, b"1" * 450), add(2, e, bytes([e]) * 50)]
        for first in range(0, 40, 10):
            storage.apply(mixed[first : first + 10])
        storage.close()  # seals the current log, so every log is GC's
        storage = LedgerStorage(tmp_path, entry_log_bytes=4000)
        before = entry_log_files(tmp_path)
        assert storage.compact().rewritten_logs == 0  # nothing is dead yet
        storage.apply([JournalRecord(RecordKind.DELETE, 1)])
        assert storage.compact().removed_logs == 0  # deleted but not collected: still live
        assert storage.collect(1)
        result = storage.compact()
        assert (result.removed_logs, result.rewritten_logs, result.moved_entries) == (2, 2, 20)
        after = entry_log_files(tmp_path)
        assert len(before) == 5  # four full ones and the current one of this open
        assert len(after) == 1
        assert [e.payload for e in storage.read_range(2, 0, 100)] == [
            bytes([e]) * 50 for e in range(20)
        ]
        assert storage.compact() == CompactionResult()  # nothing left to do
        storage.close()
        storage = LedgerStorage(tmp_path, entry_log_bytes=4000)
        assert [e.entry_id for e in storage.read_range(2, 0, 100)] == list(range(20))
        entry = storage.get_entry(2, 7)
        assert entry is not None
        assert (entry.payload, entry.lac, entry.digest) == (bytes([7]) * 50, -1, 77)
    finally:
        storage.close()


def test_compaction_skips_copies_the_index_no_longer_points_at(tmp_path: Path) -> None:
    """Journal replay appends an add again; compaction moves only the copy the index names."""
    storage = LedgerStorage(tmp_path, entry_log_bytes=1000)
    try:
        storage.apply([add(5, 0, b"old" * 100), add(6, 0, b"x" * 700)])  # log 1, now full
        storage.apply([add(5, 0, b"old" * 100)])  # replayed: a second copy, in log 2
        storage.apply([JournalRecord(RecordKind.DELETE, 6)])
        assert storage.collect(6)
        storage.close()
        storage = LedgerStorage(tmp_path, entry_log_bytes=1000)
        result = storage.compact()  # log 1 is 70% dead; its copy of 5:0 is stale
        assert (result.removed_logs, result.rewritten_logs, result.moved_entries) == (0, 1, 0)
        assert entry_log_files(tmp_path) == ["00000002.log", "00000003.log"]
        entry = storage.get_entry(5, 0)
        assert entry is not None
        assert entry.payload == b"old" * 100
    finally:
        storage.close()


def test_refuses_the_old_layout(tmp_path: Path) -> None:
    (tmp_path / "CURRENT").write_text("MANIFEST-000001\n")
    with pytest.raises(StorageUnavailable, match="old layout"):
        LedgerStorage(tmp_path)


async def test_journal_replay_repairs_entry_log_data_lost_in_a_crash(tmp_path: Path) -> None:
    """The index reached disk but the entry log's unsynced pages did not (a power loss can do
    that: RocksDB flushes a full memtable on its own). The journal's mark had not moved past
    those adds, so replay appends them again and the index points at the new copies."""
    storage = LedgerStorage(tmp_path / "ledgers")
    journal = await Journal.open(tmp_path / "journal", storage)
    for e in range(50):
        await journal.append(add(9, e, bytes([e]) * 300, lac=e - 1))
    await journal.close()  # no checkpoint: the mark stays before these adds
    storage.close()
    logs = tmp_path / "ledgers" / "entrylogs"
    for path in logs.glob("*.log"):
        os.truncate(path, 0)  # the payloads are gone, the index that names them is not
    for path in logs.glob("*.ledgers"):
        path.unlink()
    storage = LedgerStorage(tmp_path / "ledgers")
    try:
        with pytest.raises(StorageCorrupt):
            storage.get_entry(9, 0)  # refused, not returned wrong
        journal = await Journal.open(tmp_path / "journal", storage)  # replays
        await journal.close()
        entries = storage.read_range(9, 0, 100)
        assert [e.payload for e in entries] == [bytes([e]) * 300 for e in range(50)]
        assert entries[-1].lac == 48
    finally:
        storage.close()


def mostly_dead_log(path: Path) -> None:
    """One sealed log: ledger 1 (deleted, collected) 300 kB, ledger 2 (live) 2,100 entries."""
    storage = LedgerStorage(path)
    storage.apply([add(1, e, b"a" * 1000) for e in range(300)])
    storage.apply([add(2, e, e.to_bytes(2, "big") * 50) for e in range(2100)])
    storage.apply([JournalRecord(RecordKind.DELETE, 1)])
    assert storage.collect(1)
    storage.close()


def test_compaction_copies_at_its_rate_limit(tmp_path: Path) -> None:
    mostly_dead_log(tmp_path)
    storage = LedgerStorage(tmp_path)
    try:
        started = time.monotonic()
        result = storage.compact(bytes_per_s=200_000)  # 210 kB live: about a second
        assert time.monotonic() - started >= 0.9
        assert (result.rewritten_logs, result.moved_entries) == (1, 2100)
    finally:
        storage.close()


def test_close_stops_a_throttled_compaction_and_loses_nothing(tmp_path: Path) -> None:
    mostly_dead_log(tmp_path)
    storage = LedgerStorage(tmp_path)
    results: list[object] = []
    worker = threading.Thread(
        target=lambda: results.append(storage.compact(bytes_per_s=10_000))  # ~20 s of copying
    )
    worker.start()
    time.sleep(0.3)
    started = time.monotonic()
    storage.close()  # interrupts the throttle's wait, then waits for the compaction to stop
    worker.join(5)
    assert time.monotonic() - started < 2
    assert results == [CompactionResult()]  # stopped early: nothing counted, nothing removed
    storage = LedgerStorage(tmp_path)
    try:
        entries = storage.read_range(2, 0, 5000)
        assert [e.payload for e in entries] == [e.to_bytes(2, "big") * 50 for e in range(2100)]
        assert entry_log_files(tmp_path)[0] == "00000001.log"  # the old log was kept
    finally:
        storage.close()


def test_compaction_syncs_its_copies_before_the_index_names_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Relocations are not journalled: were the index repointed first and flushed by RocksDB
    on its own, a power loss before the entry log's sync would leave it pointing at nothing."""
    mostly_dead_log(tmp_path)
    storage = LedgerStorage(tmp_path)
    events: list[str] = []
    real_append, real_sync = EntryLog.append, EntryLog.sync
    real_batch = ledger_storage.WriteBatch

    def append(self: EntryLog, entries: Any) -> Any:
        events.append("copy")
        return real_append(self, entries)

    def sync(self: EntryLog) -> None:
        events.append("sync")
        real_sync(self)

    def batch(*args: Any, **kwargs: Any) -> Any:
        events.append("index")
        return real_batch(*args, **kwargs)

    monkeypatch.setattr(EntryLog, "append", append)
    monkeypatch.setattr(EntryLog, "sync", sync)
    monkeypatch.setattr(ledger_storage, "WriteBatch", batch)
    try:
        result = storage.compact(bytes_per_s=1e12)
        assert result.moved_entries == 2100
        assert events[:6] == ["copy", "sync", "index", "copy", "sync", "index"]
    finally:
        monkeypatch.undo()
        storage.close()
