"""Ledger storage: entry payloads in entry logs, an index and per-ledger metadata in RocksDB.
The package's only rocksdict user.

Layout under the ledger dir: ``entrylogs/`` (:mod:`magnetar.bookie.entry_log`) and ``index/``
(RocksDB) with these keys (big-endian so that RocksDB's byte order is (ledger id, entry id)
order)::

    b"e" | ledger_id (u64) | entry_id (u64)
        -> lac (i64) | digest (u32) | log id (u32) | record offset (u64) | payload length (u32)
    b"m" | ledger_id (u64) -> flags (u8) | lac (i64) | key length (u16) | master key

Flags: 1 fenced, 2 deleted (a tombstone: ledger ids are never reused, so it stays to refuse a
zombie writer), 4 collected (its entries were removed from the index by GC).

Durability choice: RocksDB's own WAL is **off** and entry logs are not synced per append. The
journal is the write-ahead log: every change reaches storage only through
:meth:`LedgerStorage.apply` after it was fsynced in the journal, and the journal moves its log
mark only after :meth:`LedgerStorage.flush` synced the entry logs and then pushed the memtable
to SST files. A crash loses at most what was applied since, which journal replay rebuilds
(``apply`` is idempotent: a replayed add is appended again and the index points at the new
copy; LACs take the max; flags are only ever set). Writing each change twice more (RocksDB WAL)
would only cut write bandwidth.

GC: :meth:`LedgerStorage.collect` drops a deleted ledger's index entries;
:meth:`LedgerStorage.compact` then deletes sealed entry logs that hold nothing live and
rewrites the live entries of logs that are mostly dead (BookKeeper's GC and compaction).

Concurrency: every method is blocking and thread-safe; call them from executor threads, never
from the event loop. ``_lock`` guards the meta cache and makes an index write atomic with the
check before it (compaction moves an entry only if the index still points at the old copy).
"""

from __future__ import annotations

import struct
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NamedTuple

from rocksdict import Options, Rdict, WriteBatch, WriteOptions

from magnetar.bookie.entry_log import PAGE_CACHE_BYTES, EntryLocation, EntryLog, ScannedEntry
from magnetar.bookie.errors import StorageCorrupt, StorageUnavailable
from magnetar.bookie.index_rows import ENTRY_KEY, ENTRY_PREFIX, INDEX, MetaChange, index_adds
from magnetar.bookie.journal_record import JournalRecord
from magnetar.telemetry import get_logger

log = get_logger(__name__)

_META_PREFIX = b"m"
_META_HEAD = struct.Struct(">BqH")
_U64 = struct.Struct(">Q")
_FENCED = 1
_DELETED = 2
_COLLECTED = 4
_BYTES_PER_SYNC = 1 << 20
_MAX_U64 = (1 << 64) - 1
_RELOCATE_CHUNK = 1024
ENTRY_LOG_SIZE_LIMIT = 256 << 20  # a new entry log starts past this many bytes
ENTRY_LOG_PAGE_CACHE_BYTES = PAGE_CACHE_BYTES  # entry-log bytes cached behind the last one
# Compaction copies at most this many bytes a second, so that it never competes with the
# journal for the disk in bursts (BookKeeper throttles it too: compactionRateByBytes).
COMPACTION_BYTES_PER_S = 16 << 20
# Compaction rewrites a sealed entry log whose live bytes are below this share of its bytes
# (BookKeeper's minor compaction threshold is 0.2, its major one 0.8).
COMPACTION_THRESHOLD = 0.5


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


class ListedEntry(NamedTuple):
    """One index entry as the audit's listing sees it (no payload)."""

    ledger_id: int
    entry_id: int
    length: int
    digest: int


def _merged(change: MetaChange, old: LedgerMeta | None) -> LedgerMeta:
    """``old`` (None: no meta yet) with what one group did to its ledger."""
    base = old or LedgerMeta()
    return LedgerMeta(
        master_key=base.master_key or change.master_key,
        fenced=base.fenced or change.fenced,
        deleted=base.deleted or change.deleted,
        collected=base.collected and not change.deleted,  # a delete is collected anew
        lac=max(base.lac, change.lac),
    )


def entry_key(ledger_id: int, entry_id: int) -> bytes:
    return ENTRY_KEY.pack(ENTRY_PREFIX, ledger_id, entry_id)


def meta_key(ledger_id: int) -> bytes:
    return _META_PREFIX + _U64.pack(ledger_id)


class _IndexValue(NamedTuple):
    lac: int
    digest: int
    location: EntryLocation


def _encode_index(lac: int, digest: int, location: EntryLocation) -> bytes:
    return INDEX.pack(lac, digest, location.log_id, location.offset, location.length)


def _decode_index(ledger_id: int, entry_id: int, value: bytes) -> _IndexValue:
    try:
        lac, digest, log_id, offset, length = INDEX.unpack(value)
    except struct.error as exc:
        raise StorageCorrupt(f"index entry {ledger_id}:{entry_id} does not decode") from exc
    return _IndexValue(lac, digest, EntryLocation(log_id, offset, length))


@dataclass(frozen=True, slots=True)
class CompactionResult:
    removed_logs: int = 0
    rewritten_logs: int = 0
    moved_entries: int = 0


class LedgerStorage:
    """Entry logs plus a RocksDB index and ledger metas; a :class:`JournalSink`."""

    def __init__(
        self,
        path: Path,
        *,
        entry_log_bytes: int = ENTRY_LOG_SIZE_LIMIT,
        entry_log_page_cache_bytes: int = ENTRY_LOG_PAGE_CACHE_BYTES,
        entry_log_direct_writes: bool = True,
        writeback_bytes: int = 1 << 20,
    ) -> None:
        path.mkdir(parents=True, exist_ok=True)
        if (path / "CURRENT").exists():
            raise StorageUnavailable(
                f"ledger storage at {path} has the old layout (entries inside RocksDB, before "
                "entry logs); this version cannot read it. Move the bookie's data dir aside "
                "and let the ledgers re-replicate, or run the release that wrote it."
            )
        index_path = path / "index"
        options = Options(raw_mode=True)
        options.create_if_missing(True)
        # Write SST files back to disk a MiB at a time as they are built, not all at once at
        # the end of a flush or compaction: a 64 MiB burst queued on the disk made the
        # journal's fdatasync (on every acknowledgement's path) wait behind it
        # (docs/benchmarks.md, "Broker round 4").
        options.set_bytes_per_sync(_BYTES_PER_SYNC)
        try:
            self._db = Rdict(str(index_path), options)
        except Exception as exc:  # rocksdict raises plain Exception
            raise StorageUnavailable(
                f"cannot open ledger storage at {index_path}: {exc}. Is another bookie process "
                "using this data dir?"
            ) from exc
        self._no_wal = WriteOptions()
        # A property at run time; rocksdict's stub wrongly declares a method.
        self._no_wal.disable_wal = True  # type: ignore[method-assign, assignment]
        self._lock = threading.Lock()
        self._compacting = threading.Lock()
        self._closing = threading.Event()
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
        self._log = EntryLog(
            path / "entrylogs",
            roll_bytes=entry_log_bytes,
            writeback_bytes=writeback_bytes,
            page_cache_bytes=entry_log_page_cache_bytes,
            direct_writes=entry_log_direct_writes,
        )

    # -- writes (journal sink) ------------------------------------------------------------

    def apply(self, records: Sequence[JournalRecord], payload_crcs: Sequence[int] = ()) -> None:
        """Write ``records`` (one entry-log write, one RocksDB batch); each touched ledger's
        meta is merged once per call, not rebuilt per record (an add raises the LAC nearly
        every time). Adds are handled as runs of one ledger: one meta lookup per run.
        ``payload_crcs``: as :meth:`JournalSink.apply` has them (for the entry-log records)."""
        batch = WriteBatch(raw_mode=True)
        # two compiled loops: the entry-log records of the adds, then their index rows
        log_id, offset = self._log.append_records(records, payload_crcs)
        changes = index_adds(records, batch.put, log_id, offset)
        with self._lock:
            changed: dict[int, LedgerMeta] = {}
            for ledger_id, change in changes.items():
                old = self._metas.get(ledger_id)
                meta = _merged(change, old)
                if meta != old:
                    changed[ledger_id] = meta
                    batch.put(meta_key(ledger_id), meta.encode())
            self._db.write(batch, self._no_wal)
            self._metas.update(changed)

    def flush(self) -> None:
        """Entry logs first, then the index that points into them."""
        self._log.sync()
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
        index = _decode_index(ledger_id, entry_id, value)
        payload = self._log.read(ledger_id, entry_id, index.location)
        return StoredEntry(ledger_id, entry_id, index.lac, index.digest, payload)

    def last_entry_id(self, ledger_id: int) -> int:
        """The highest entry id stored for the ledger, -1 if none."""
        it = self._db.iter()
        it.seek_for_prev(entry_key(ledger_id, _MAX_U64))
        if it.valid():
            key = it.key()
            if key[:9] == ENTRY_PREFIX + _U64.pack(ledger_id):
                return int(_U64.unpack_from(key, 9)[0])
        return -1

    def read_range(
        self, ledger_id: int, first: int, last: int, max_bytes: int = 0
    ) -> list[StoredEntry]:
        """Stored entries with first <= id <= last in order (gaps skipped); stop past max_bytes.

        At least one entry is returned when any is stored in the range.
        """
        found: list[tuple[int, _IndexValue]] = []
        total = 0
        prefix = ENTRY_PREFIX + _U64.pack(ledger_id)
        it = self._db.iter()
        it.seek(entry_key(ledger_id, first))
        while it.valid():
            key = it.key()
            if key[:9] != prefix:
                break
            entry_id = int(_U64.unpack_from(key, 9)[0])
            if entry_id > last:
                break
            index = _decode_index(ledger_id, entry_id, it.value())
            if found and max_bytes and total + index.location.length > max_bytes:
                break
            found.append((entry_id, index))
            total += index.location.length
            it.next()
        del it
        payloads = self._log.read_many([(ledger_id, e, index.location) for e, index in found])
        return [
            StoredEntry(ledger_id, entry_id, index.lac, index.digest, payload)
            for (entry_id, index), payload in zip(found, payloads, strict=True)
        ]

    def entry_ranges(self, ledger_id: int) -> list[tuple[int, int]]:
        """Contiguous runs of stored entry ids, as inclusive (first, last) pairs."""
        ranges: list[tuple[int, int]] = []
        prefix = ENTRY_PREFIX + _U64.pack(ledger_id)
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

    def list_entries(
        self, start: tuple[int, int], last_ledger_id: int, limit: int
    ) -> list[ListedEntry]:
        """At most ``limit`` index entries from ``start`` (ledger id, entry id; inclusive) up to
        the end of ledger ``last_ledger_id``, in key order; index only, no payload is read.
        Entries of deleted ledgers not yet collected are included (the caller filters)."""
        found: list[ListedEntry] = []
        it = self._db.iter()
        it.seek(entry_key(*start))
        while it.valid() and len(found) < limit:
            key = it.key()
            if key[:1] != ENTRY_PREFIX:
                break
            ledger_id = int(_U64.unpack_from(key, 1)[0])
            if ledger_id > last_ledger_id:
                break
            entry_id = int(_U64.unpack_from(key, 9)[0])
            index = _decode_index(ledger_id, entry_id, it.value())
            found.append(ListedEntry(ledger_id, entry_id, index.location.length, index.digest))
            it.next()
        del it
        return found

    # -- compaction -----------------------------------------------------------------------

    def compact(
        self,
        threshold: float = COMPACTION_THRESHOLD,
        bytes_per_s: float = COMPACTION_BYTES_PER_S,
    ) -> CompactionResult:
        """Delete sealed entry logs that hold no live entry and rewrite the live entries of
        those whose live share is below ``threshold``. Live: of a ledger that is not both
        deleted and collected (collected ledgers have no index entries left). Copies run at
        ``bytes_per_s`` at most. :meth:`close` waits for a running compaction, which stops
        early when it sees the close coming: while copying it removes nothing (entries it
        already copied are then simply stored twice); while removing, the log being removed
        is left for the next open to unlink."""
        with self._compacting:
            if self._closing.is_set():
                return CompactionResult()
            return self._compact(threshold, bytes_per_s)

    def _compact(self, threshold: float, bytes_per_s: float) -> CompactionResult:
        with self._lock:
            dead = {i for i, meta in self._metas.items() if meta.deleted and meta.collected}
        empty: list[int] = []
        sparse: list[int] = []
        for log_id, usage in sorted(self._log.sealed_usage().items()):
            live = sum(size for ledger_id, size in usage.items() if ledger_id not in dead)
            if live == 0:
                empty.append(log_id)
            elif live < threshold * sum(usage.values()):
                sparse.append(log_id)
        if not empty and not sparse:
            return CompactionResult()
        moved = 0
        started = time.monotonic()
        copied = 0  # bytes of live candidates so far, for the rate limit
        for log_id in sparse:
            chunk: list[ScannedEntry] = []
            for scanned in self._log.scan(log_id):
                if scanned.ledger_id not in dead:
                    chunk.append(scanned)
                if len(chunk) >= _RELOCATE_CHUNK:
                    moved += self._relocate(chunk)
                    copied += sum(s.location.length for s in chunk)
                    chunk = []
                    ahead = copied / bytes_per_s - (time.monotonic() - started)
                    if self._closing.wait(max(0.0, ahead)):
                        return CompactionResult()  # closing: remove nothing
            moved += self._relocate(chunk)
        # The index no longer points into these logs; make that durable before they go.
        self.flush()
        for log_id in empty + sparse:
            # A stop cuts a removal short (the next open finishes it): never waited on.
            self._log.remove(log_id, stop=self._closing)
        result = CompactionResult(len(empty), len(sparse), moved)
        log.info(
            "entry_logs_compacted",
            removed=result.removed_logs,
            rewritten=result.rewritten_logs,
            moved_entries=result.moved_entries,
        )
        return result

    def _relocate(self, scanned: Sequence[ScannedEntry]) -> int:
        """Copy the entries the index still points at (in ``scanned``'s log) to the current
        log, sync the copies, then repoint the index; return how many moved.

        The copies are durable before any index entry names them: relocations are not in the
        journal, so if RocksDB flushed a memtable on its own before the entry log was synced,
        a power loss would leave the index pointing at nothing. Copies whose entry changed
        meanwhile (re-added, or its ledger deleted) are left unreferenced."""
        current = [s for s in scanned if self._index_if_at(s) is not None]
        if not current:
            return 0
        # The scan read (and checked) the payloads already: no second read per entry.
        locations = self._log.append([(s.ledger_id, s.entry_id, bytes(s.payload)) for s in current])
        self._log.sync()
        batch = WriteBatch(raw_mode=True)
        moved = 0
        with self._lock:  # apply() and collect() cannot change these keys meanwhile
            for s, location in zip(current, locations, strict=True):
                index = self._index_if_at(s)
                if index is not None and not self._is_deleted(s.ledger_id):
                    value = _encode_index(index.lac, index.digest, location)
                    batch.put(entry_key(s.ledger_id, s.entry_id), value)
                    moved += 1
            if moved:
                self._db.write(batch, self._no_wal)
        return moved

    def _index_if_at(self, scanned: ScannedEntry) -> _IndexValue | None:
        """The entry's index value if it points at ``scanned``'s copy, else None."""
        value = self._db.get(entry_key(scanned.ledger_id, scanned.entry_id))
        if value is None:
            return None
        index = _decode_index(scanned.ledger_id, scanned.entry_id, value)
        return index if index.location == scanned.location else None

    def _is_deleted(self, ledger_id: int) -> bool:
        meta = self._metas.get(ledger_id)
        return meta is not None and meta.deleted

    def close(self) -> None:
        self._closing.set()
        with self._compacting:
            pass
        self._log.close()
        self._db.flush(True)
        self._db.close()
