"""Ledger storage on RocksDB: entries and per-ledger metadata. The package's only rocksdict user.

Keys (big-endian so that RocksDB's byte order is (ledger id, entry id) order)::

    b"e" | ledger_id (u64) | entry_id (u64) -> lac (i64) | digest (u32) | payload
    b"m" | ledger_id (u64) -> flags (u8) | lac (i64) | key length (u16) | master key

Flags: 1 fenced, 2 deleted (a tombstone: ledger ids are never reused, so it stays to refuse a
zombie writer), 4 collected (its entries were removed by GC).

Durability choice: RocksDB's own WAL is **off**. The journal is the write-ahead log: every
change reaches RocksDB only through :meth:`LedgerStorage.apply` after it was fsynced in the
journal, and the journal moves its log mark only after :meth:`LedgerStorage.flush` pushed the
memtable to SST files. A crash loses at most the memtable, which journal replay rebuilds
(``apply`` is idempotent: puts of equal values, max of LACs, flags only ever set). Writing each
change twice (journal + RocksDB WAL) would only halve write bandwidth.

Concurrency: every method is blocking and thread-safe; call them from executor threads, never
from the event loop. The meta cache is guarded by a lock; RocksDB handles its own locking.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from rocksdict import Options, Rdict, WriteBatch, WriteOptions

from magnetar.bookie.errors import StorageCorrupt, StorageUnavailable
from magnetar.bookie.journal import JournalRecord, RecordKind

_ENTRY_PREFIX = b"e"
_META_PREFIX = b"m"
_ENTRY_HEAD = struct.Struct(">qI")
_META_HEAD = struct.Struct(">BqH")
_U64 = struct.Struct(">Q")
_FENCED = 1
_DELETED = 2
_COLLECTED = 4
_BYTES_PER_SYNC = 1 << 20
_MAX_U64 = (1 << 64) - 1


@dataclass(frozen=True, slots=True)
class LedgerMeta:
    """What the bookie persists about one ledger besides its entries."""

    master_key: bytes = b""
    fenced: bool = False
    deleted: bool = False
    collected: bool = False
    lac: int = -1

    def encode(self) -> bytes:
        flags = (
            (_FENCED if self.fenced else 0)
            | (_DELETED if self.deleted else 0)
            | (_COLLECTED if self.collected else 0)
        )
        return _META_HEAD.pack(flags, self.lac, len(self.master_key)) + self.master_key

    @classmethod
    def decode(cls, data: bytes) -> LedgerMeta:
        try:
            flags, lac, key_len = _META_HEAD.unpack_from(data, 0)
        except struct.error as exc:
            raise StorageCorrupt("ledger meta value does not decode") from exc
        start = _META_HEAD.size
        return cls(
            master_key=data[start : start + key_len],
            fenced=bool(flags & _FENCED),
            deleted=bool(flags & _DELETED),
            collected=bool(flags & _COLLECTED),
            lac=lac,
        )


@dataclass(frozen=True, slots=True)
class StoredEntry:
    ledger_id: int
    entry_id: int
    lac: int
    digest: int
    payload: bytes


@dataclass(slots=True)
class _MetaChange:
    """What one :meth:`LedgerStorage.apply` call does to one ledger's meta (flags only get set,
    the LAC only grows, the first non-empty master key sticks)."""

    master_key: bytes
    lac: int = -1
    fenced: bool = False
    deleted: bool = False

    def merged(self, old: LedgerMeta | None) -> LedgerMeta:
        base = old or LedgerMeta()
        return LedgerMeta(
            master_key=base.master_key or self.master_key,
            fenced=base.fenced or self.fenced,
            deleted=base.deleted or self.deleted,
            collected=base.collected and not self.deleted,  # a delete is collected anew
            lac=max(base.lac, self.lac),
        )


def entry_key(ledger_id: int, entry_id: int) -> bytes:
    return _ENTRY_PREFIX + _U64.pack(ledger_id) + _U64.pack(entry_id)


def meta_key(ledger_id: int) -> bytes:
    return _META_PREFIX + _U64.pack(ledger_id)


def _decode_entry(ledger_id: int, entry_id: int, value: bytes) -> StoredEntry:
    try:
        lac, digest = _ENTRY_HEAD.unpack_from(value, 0)
    except struct.error as exc:
        raise StorageCorrupt(f"entry {ledger_id}:{entry_id} does not decode") from exc
    return StoredEntry(ledger_id, entry_id, lac, digest, value[_ENTRY_HEAD.size :])


class LedgerStorage:
    """RocksDB-backed entry and ledger-meta store; a :class:`JournalSink`."""

    def __init__(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)
        options = Options(raw_mode=True)
        options.create_if_missing(True)
        # Write SST files back to disk a MiB at a time as they are built, not all at once at
        # the end of a flush or compaction: a 64 MiB burst queued on the disk made the
        # journal's fdatasync (on every acknowledgement's path) wait up to 20 ms.
        options.set_bytes_per_sync(_BYTES_PER_SYNC)
        try:
            self._db = Rdict(str(path), options)
        except Exception as exc:  # rocksdict raises plain Exception
            raise StorageUnavailable(
                f"cannot open ledger storage at {path}: {exc}. Is another bookie process "
                "using this data dir?"
            ) from exc
        self._no_wal = WriteOptions()
        # A property at run time; rocksdict's stub wrongly declares a method.
        self._no_wal.disable_wal = True  # type: ignore[method-assign, assignment]
        self._lock = threading.Lock()
        self._metas: dict[int, LedgerMeta] = {}
        it = self._db.iter()
        it.seek(_META_PREFIX)
        while it.valid():
            key = it.key()
            if not key.startswith(_META_PREFIX):
                break
            self._metas[_U64.unpack_from(key, 1)[0]] = LedgerMeta.decode(it.value())
            it.next()
        del it

    # -- writes (journal sink) ------------------------------------------------------------

    def apply(self, records: Sequence[JournalRecord]) -> None:
        """Write ``records`` (one RocksDB batch); each touched ledger's meta is merged once per
        call, not rebuilt per record (an add raises the LAC nearly every time)."""
        batch = WriteBatch(raw_mode=True)
        changes: dict[int, _MetaChange] = {}
        for rec in records:
            change = changes.get(rec.ledger_id)
            if change is None:
                change = changes[rec.ledger_id] = _MetaChange(rec.master_key)
            elif not change.master_key:
                change.master_key = rec.master_key
            kind = rec.kind
            if kind is RecordKind.ADD:
                value = _ENTRY_HEAD.pack(rec.lac, rec.digest) + rec.payload
                batch.put(entry_key(rec.ledger_id, rec.entry_id), value)
                if rec.lac > change.lac:
                    change.lac = rec.lac
            elif kind is RecordKind.FENCE:
                change.fenced = True
            elif kind is RecordKind.DELETE:
                change.deleted = True
        with self._lock:
            changed: dict[int, LedgerMeta] = {}
            for ledger_id, change in changes.items():
                old = self._metas.get(ledger_id)
                meta = change.merged(old)
                if meta != old:
                    changed[ledger_id] = meta
                    batch.put(meta_key(ledger_id), meta.encode())
            self._db.write(batch, self._no_wal)
            self._metas.update(changed)

    def flush(self) -> None:
        self._db.flush(True)

    def collect(self, ledger_id: int) -> bool:
        """Delete a deleted ledger's entries (GC). Returns False if it is not deleted."""
        with self._lock:
            meta = self._metas.get(ledger_id)
            if meta is None or not meta.deleted:
                return False
        self._db.delete_range(entry_key(ledger_id, 0), entry_key(ledger_id, _MAX_U64), self._no_wal)
        self._db.delete(entry_key(ledger_id, _MAX_U64), self._no_wal)
        with self._lock:
            meta = self._metas.get(ledger_id)
            if meta is not None and meta.deleted:
                meta = replace(meta, collected=True)
                self._db.put(meta_key(ledger_id), meta.encode(), self._no_wal)
                self._metas[ledger_id] = meta
        return True

    # -- reads ----------------------------------------------------------------------------

    def metas(self) -> dict[int, LedgerMeta]:
        with self._lock:
            return dict(self._metas)

    def meta(self, ledger_id: int) -> LedgerMeta | None:
        with self._lock:
            return self._metas.get(ledger_id)

    def get_entry(self, ledger_id: int, entry_id: int) -> StoredEntry | None:
        value = self._db.get(entry_key(ledger_id, entry_id))
        if value is None:
            return None
        return _decode_entry(ledger_id, entry_id, value)

    def last_entry_id(self, ledger_id: int) -> int:
        """The highest entry id stored for the ledger, -1 if none."""
        it = self._db.iter()
        it.seek_for_prev(entry_key(ledger_id, _MAX_U64))
        if it.valid():
            key = it.key()
            if key[:9] == _ENTRY_PREFIX + _U64.pack(ledger_id):
                return int(_U64.unpack_from(key, 9)[0])
        return -1

    def read_range(
        self, ledger_id: int, first: int, last: int, max_bytes: int = 0
    ) -> list[StoredEntry]:
        """Stored entries with first <= id <= last in order (gaps skipped); stop past max_bytes.

        At least one entry is returned when any is stored in the range.
        """
        out: list[StoredEntry] = []
        total = 0
        prefix = _ENTRY_PREFIX + _U64.pack(ledger_id)
        it = self._db.iter()
        it.seek(entry_key(ledger_id, first))
        while it.valid():
            key = it.key()
            if key[:9] != prefix:
                break
            entry_id = int(_U64.unpack_from(key, 9)[0])
            if entry_id > last:
                break
            entry = _decode_entry(ledger_id, entry_id, it.value())
            if out and max_bytes and total + len(entry.payload) > max_bytes:
                break
            out.append(entry)
            total += len(entry.payload)
            it.next()
        return out

    def entry_ranges(self, ledger_id: int) -> list[tuple[int, int]]:
        """Contiguous runs of stored entry ids, as inclusive (first, last) pairs."""
        ranges: list[tuple[int, int]] = []
        prefix = _ENTRY_PREFIX + _U64.pack(ledger_id)
        it = self._db.iter()
        it.seek(prefix)
        while it.valid():
            key = it.key()
            if key[:9] != prefix:
                break
            entry_id = int(_U64.unpack_from(key, 9)[0])
            if ranges and ranges[-1][1] + 1 == entry_id:
                ranges[-1] = (ranges[-1][0], entry_id)
            else:
                ranges.append((entry_id, entry_id))
            it.next()
        return ranges

    def close(self) -> None:
        self._db.flush(True)
        self._db.close()
