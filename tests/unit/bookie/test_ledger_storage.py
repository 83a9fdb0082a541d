"""RocksDB ledger storage: idempotent apply, meta, ranges, GC, reopen."""

from __future__ import annotations

from pathlib import Path

from magnetar.bookie.journal import JournalRecord, RecordKind
from magnetar.bookie.ledger_storage import LedgerMeta, LedgerStorage


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
    options = max(tmp_path.glob("OPTIONS-*")).read_text()
    assert "  bytes_per_sync=1048576\n" in options
