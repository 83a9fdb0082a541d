"""The embedded RocksDB backend, for a standalone process: ``rocksdb:///abs/path``.

The only module of this package that imports ``rocksdict``. Layout in the database (raw bytes)::

    b"k" + key (UTF-8)  ->  b"\\x01" | version (8 bytes BE) | lease id (8 bytes BE) | value
    b"e" + key (UTF-8)  ->  b""     (the key is ephemeral: the persisted set purged on open)

UTF-8 byte order equals code point order, so a RocksDB scan is sorted like Python strings.

Invariants: every write is one synced WriteBatch (WAL fsync) so a kill -9 loses nothing that
was acknowledged; record and ephemeral marker change together. Sessions are in-process leases:
a process that opens the database has no live session, so every ephemeral key left by the
previous process is deleted on open.

Concurrency: one :class:`RocksMetadataServer` per path per process (refcounted registry), shared
by every store opened on that path; RocksDB work runs on its single-thread executor (see
:mod:`magnetar.metadata.embedded`), which also serialises compare-and-set.
"""

from __future__ import annotations

import asyncio
import os
import struct
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

import rocksdict

from magnetar.metadata.embedded import EmbeddedMetadataStore, EmbeddedServer, Record
from magnetar.metadata.errors import StoreUnavailable
from magnetar.telemetry import get_logger

log = get_logger(__name__)

_RECORD = b"k"
_EPHEMERAL = b"e"
_FORMAT = 1
_HEADER = struct.Struct(">BQQ")


def encode_record(record: Record) -> bytes:
    return _HEADER.pack(_FORMAT, record.version, record.lease) + record.value


def decode_record(raw: bytes) -> Record:
    fmt, version, lease = _HEADER.unpack_from(raw)
    if fmt != _FORMAT:
        raise StoreUnavailable(f"metadata record in unknown format {fmt}")
    return Record(bytes(raw[_HEADER.size :]), version, lease)


def _normalise(path: str) -> str:
    if not os.path.isabs(path):
        raise ValueError(f"RocksDB metadata path must be absolute, got {path!r}")
    return os.path.normpath(path)


class RocksKeyspace:
    """Records in a RocksDB database; every method blocks (run it in the executor)."""

    def __init__(self, path: str) -> None:
        options = rocksdict.Options(raw_mode=True)
        options.create_if_missing(True)
        try:
            self._db: Any = rocksdict.Rdict(path, options)
        except Exception as exc:  # rocksdict raises plain Exception for I/O and lock errors
            raise StoreUnavailable(f"cannot open RocksDB metadata at {path!r}: {exc}") from exc
        self._sync = rocksdict.WriteOptions()
        self._sync.sync = True

    def get(self, key: str) -> Record | None:
        raw = self._db.get(_RECORD + key.encode())
        return None if raw is None else decode_record(raw)

    def _scan_raw(self, prefix: bytes) -> list[tuple[bytes, bytes]]:
        out = []
        it = self._db.iter()
        it.seek(prefix)
        while it.valid():
            k = it.key()
            if not k.startswith(prefix):
                break
            out.append((k, it.value()))
            it.next()
        del it
        return out

    def scan(self, prefix: str) -> list[tuple[str, Record]]:
        raw = self._scan_raw(_RECORD + prefix.encode())
        return [(k[1:].decode(), decode_record(v)) for k, v in raw]

    def write(self, puts: Sequence[tuple[str, Record]], deletes: Sequence[str]) -> None:
        batch = rocksdict.WriteBatch(raw_mode=True)
        for key, record in puts:
            bkey = key.encode()
            batch.put(_RECORD + bkey, encode_record(record))
            if record.lease:
                batch.put(_EPHEMERAL + bkey, b"")
            else:
                batch.delete(_EPHEMERAL + bkey)
        for key in deletes:
            batch.delete(_RECORD + key.encode())
            batch.delete(_EPHEMERAL + key.encode())
        try:
            self._db.write(batch, self._sync)
        except Exception as exc:
            raise StoreUnavailable(f"RocksDB metadata write failed: {exc}") from exc

    def purge_ephemeral(self) -> list[str]:
        """Delete every ephemeral key (no session survives a restart); return them."""
        keys = [k[1:].decode() for k, _ in self._scan_raw(_EPHEMERAL)]
        if keys:
            self.write((), keys)
        return keys

    def close(self) -> None:
        self._db.close()


class RocksMetadataServer(EmbeddedServer):
    """The server of one RocksDB path: opened by its first store, closed by its last."""

    _registry: ClassVar[dict[str, RocksMetadataServer]] = {}
    _opening: ClassVar[dict[str, asyncio.Future[RocksMetadataServer]]] = {}

    def __init__(self, path: str, keyspace: RocksKeyspace, executor: ThreadPoolExecutor) -> None:
        super().__init__(keyspace, executor=executor)
        self.path = path
        self._rocks = keyspace
        self._pool = executor
        self._refs = 0

    @classmethod
    async def acquire(cls, path: str) -> RocksMetadataServer:
        path = _normalise(path)
        server = cls._registry.get(path)
        if server is None:
            opening = cls._opening.get(path)
            if opening is None:  # first opener: others wait on this future (RocksDB locks the dir)
                opening = cls._opening[path] = asyncio.get_running_loop().create_future()
                try:
                    server = await cls._open(path)
                    cls._registry[path] = server
                    opening.set_result(server)
                except Exception as exc:
                    opening.set_exception(exc)
                    opening.exception()  # retrieved here, so no "never retrieved" warning
                    raise
                except BaseException:  # cancelled: the waiters retry or give up with us
                    opening.cancel()
                    raise
                finally:
                    del cls._opening[path]
            else:
                server = await asyncio.shield(opening)
        server._refs += 1
        return server

    @classmethod
    async def _open(cls, path: str) -> RocksMetadataServer:
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="metadata-rocksdb")
        loop = asyncio.get_running_loop()
        try:
            keyspace = await loop.run_in_executor(pool, RocksKeyspace, path)
            purged = await loop.run_in_executor(pool, keyspace.purge_ephemeral)
        except BaseException:
            pool.shutdown(wait=False)
            raise
        log.info("metadata_rocksdb_opened", path=path, purged_ephemeral=len(purged))
        return cls(path, keyspace, pool)

    async def release(self) -> None:
        self._refs -= 1
        if self._refs > 0:
            return
        if self._registry.get(self.path) is self:
            del self._registry[self.path]
        async with self._serial():
            await asyncio.get_running_loop().run_in_executor(self._pool, self._rocks.close)
        self._pool.shutdown(wait=True)
        log.info("metadata_rocksdb_closed", path=self.path)


class RocksMetadataStore(EmbeddedMetadataStore):
    """A client of the :class:`RocksMetadataServer` of its path, with its own session."""

    @classmethod
    async def open(cls, path: str, *, session_timeout_s: float = 10.0) -> RocksMetadataStore:
        server = await RocksMetadataServer.acquire(path)
        store = cls(
            server,
            backend="rocksdb",
            session_timeout_s=session_timeout_s,
            on_close=server.release,
        )
        try:
            await store.start()
        except BaseException:
            await server.release()
            raise
        return store
