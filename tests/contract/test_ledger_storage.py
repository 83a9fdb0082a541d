"""The bookie's ledger-storage contract (the journal's sink): add, read, LAC, fence, delete, reopen.

``magnetar.bookie.ledger_storage.LedgerStorage`` is the only implementation (BookKeeper's
DbLedgerStorage: entry logs + a RocksDB index), so the suite runs over the configurations that
change its code paths instead: one entry log (the default size limit), entry logs that roll
over every few entries (reads and compaction cross log files), and both with write-back every
few bytes. What the tests assert is what the bookie above relies on, whatever the layout:
``apply`` is idempotent (journal replay), LACs only grow, flags are only ever set, a deleted
ledger's entries go at ``collect`` and nobody else's do, and all of it survives a reopen.
Unit tests of the layout itself (compaction counts, rate limits, sync order) stay in
``tests/unit/bookie/test_ledger_storage.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from magnetar.bookie.journal_record import JournalRecord, RecordKind
from magnetar.bookie.ledger_storage import ENTRY_LOG_SIZE_LIMIT, LedgerMeta, LedgerStorage

MK = b"master-key"


@dataclass(frozen=True)
class StorageConfig:
    entry_log_bytes: int
    writeback_bytes: int


CONFIGS = {
    "one-log": StorageConfig(ENTRY_LOG_SIZE_LIMIT, 1 << 20),
    "rolling-logs": StorageConfig(300, 1 << 20),
    "rolling-logs-tiny-writeback": StorageConfig(300, 64),
}


class Storages:
    """Opens the storage under test at one path; :meth:`reopen` closes and opens it again."""

    def __init__(self, path: Path, config: StorageConfig) -> None:
        self._path = path
        self._config = config
        self.current = self._open()

    def _open(self) -> LedgerStorage:
        return LedgerStorage(
            self._path,
            entry_log_bytes=self._config.entry_log_bytes,
            writeback_bytes=self._config.writeback_bytes,
        )

    def reopen(self) -> LedgerStorage:
        self.current.close()
        self.current = self._open()
        return self.current


@pytest.fixture(params=list(CONFIGS))
def storages(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Storages]:
    opened = Storages(tmp_path / "ledgers", CONFIGS[request.param])
    yield opened
    opened.current.close()


def add(ledger: int, entry: int, lac: int | None = None) -> JournalRecord:
    lac = entry - 1 if lac is None else lac
    return JournalRecord(RecordKind.ADD, ledger, entry, lac, digest(ledger, entry), MK,
                         payload(ledger, entry))  # fmt: skip


def digest(ledger: int, entry: int) -> int:
    return (ledger * 1_000_003 + entry) & 0xFFFFFFFF


def payload(ledger: int, entry: int) -> bytes:
    return b"%d:%d:" % (ledger, entry) + bytes([entry % 251]) * (17 * (entry % 7))


def fence(ledger: int) -> JournalRecord:
    return JournalRecord(RecordKind.FENCE, ledger, master_key=MK)


def delete(ledger: int) -> JournalRecord:
    return JournalRecord(RecordKind.DELETE, ledger)


def assert_entries(storage: LedgerStorage, ledger: int, ids: list[int]) -> None:
    """Every way of reading ``ledger`` sees exactly ``ids``, with their payloads and digests."""
    got = storage.read_range(ledger, 0, 10**6)
    assert [(e.ledger_id, e.entry_id) for e in got] == [(ledger, i) for i in ids]
    assert [(e.payload, e.digest, e.lac) for e in got] == [
        (payload(ledger, i), digest(ledger, i), i - 1) for i in ids
    ]
    for i in ids:
        entry = storage.get_entry(ledger, i)
        assert entry is not None
        assert (entry.payload, entry.digest, entry.lac) == (payload(ledger, i), digest(ledger, i),
                                                            i - 1)  # fmt: skip
    assert storage.last_entry_id(ledger) == (ids[-1] if ids else -1)


def test_added_entries_read_back_by_id_and_by_range(storages: Storages) -> None:
    storage = storages.current
    for first in range(0, 30, 6):  # several applies, as journal batches arrive
        storage.apply([add(4, e) for e in range(first, first + 6)])
    assert_entries(storage, 4, list(range(30)))
    assert [e.entry_id for e in storage.read_range(4, 10, 12)] == [10, 11, 12]
    assert storage.read_range(4, 30, 40) == []
    assert storage.get_entry(4, 30) is None
    assert storage.get_entry(5, 0) is None
    assert storage.meta(5) is None


def test_ledgers_and_gaps_stay_apart(storages: Storages) -> None:
    storage = storages.current
    storage.apply([add(1, 0), add(2, 0), add(1, 1), add(3, 5), add(1, 3), add(2, 1)])
    assert storage.entry_ranges(1) == [(0, 1), (3, 3)]
    assert [e.entry_id for e in storage.read_range(1, 0, 10)] == [0, 1, 3]
    assert_entries(storage, 2, [0, 1])
    assert storage.last_entry_id(3) == 5
    assert storage.entry_ranges(4) == []


def test_read_range_honours_max_bytes_but_returns_at_least_one_entry(storages: Storages) -> None:
    storage = storages.current
    storage.apply([add(1, e) for e in range(10)])
    sizes = [len(payload(1, e)) for e in range(10)]
    assert [e.entry_id for e in storage.read_range(1, 0, 9, max_bytes=1)] == [0]
    budget = sum(sizes[:4])
    assert [e.entry_id for e in storage.read_range(1, 0, 9, max_bytes=budget)] == [0, 1, 2, 3]


def test_lac_is_the_highest_seen_and_never_goes_back(storages: Storages) -> None:
    storage = storages.current
    storage.apply([add(1, 0, lac=-1), add(1, 1, lac=0), add(1, 2, lac=1)])
    assert storage.meta(1) == LedgerMeta(master_key=MK, lac=1)
    storage.apply([add(1, 1, lac=0)])  # a replayed, older add
    assert storage.meta(1) == LedgerMeta(master_key=MK, lac=1)
    storage.apply([add(1, 3, lac=2)])
    meta = storage.meta(1)
    assert meta is not None
    assert meta.lac == 2
    assert storages.reopen().meta(1) == LedgerMeta(master_key=MK, lac=2)


def test_fence_is_sticky_and_keeps_the_entries(storages: Storages) -> None:
    storage = storages.current
    storage.apply([add(7, 0), add(7, 1), fence(7)])
    assert storage.meta(7) == LedgerMeta(master_key=MK, fenced=True, lac=0)
    storage.apply([add(7, 2)])  # a recovery add after the fence (the bookie decides who)
    meta = storage.meta(7)
    assert meta is not None
    assert meta.fenced
    storage = storages.reopen()
    meta = storage.meta(7)
    assert meta is not None
    assert (meta.fenced, meta.master_key, meta.lac) == (True, MK, 1)
    assert_entries(storage, 7, [0, 1, 2])


def test_delete_then_collect_removes_only_that_ledger(storages: Storages) -> None:
    storage = storages.current
    for e in range(12):
        storage.apply([add(1, e), add(2, e)])
    assert not storage.collect(1)  # not deleted: GC leaves it alone
    storage.apply([delete(1)])
    meta = storage.meta(1)
    assert meta is not None
    assert (meta.deleted, meta.collected) == (True, False)
    assert storage.collect(1)
    assert storage.entry_ranges(1) == []
    assert storage.get_entry(1, 0) is None
    assert_entries(storage, 2, list(range(12)))
    storage.flush()  # seals the full logs: compaction takes only sealed, synced ones
    storage.compact(threshold=1.0, bytes_per_s=1e12)  # rewrites every log with dead bytes
    assert_entries(storage, 2, list(range(12)))
    storage = storages.reopen()
    meta = storage.meta(1)
    assert meta is not None
    assert (meta.deleted, meta.collected) == (True, True)  # the tombstone stays
    assert storage.read_range(1, 0, 100) == []
    assert_entries(storage, 2, list(range(12)))


def test_replaying_a_batch_changes_nothing_a_reader_sees(storages: Storages) -> None:
    storage = storages.current
    records = [add(3, e) for e in range(8)] + [fence(3), add(9, 0)]
    storage.apply(records)
    storage.apply(records)
    storage.apply(records[:4])
    assert_entries(storage, 3, list(range(8)))
    assert storage.meta(3) == LedgerMeta(master_key=MK, fenced=True, lac=6)
    assert_entries(storage, 9, [0])


def test_everything_survives_reopen(storages: Storages) -> None:
    storage = storages.current
    storage.apply([add(1, e) for e in range(20)] + [fence(1)])
    storage.apply([add(2, e) for e in range(5)] + [delete(2)])
    storage.flush()
    storage.apply([add(3, e) for e in range(3)])  # applied, not flushed: close must keep it
    before = storage.metas()
    storage = storages.reopen()
    assert storage.metas() == before
    assert_entries(storage, 1, list(range(20)))
    assert_entries(storage, 3, [0, 1, 2])
    assert storage.collect(2)
    assert storage.entry_ranges(2) == []
