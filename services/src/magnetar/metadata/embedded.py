"""The in-process metadata server behind the memory and RocksDB backends, and its client.

:class:`EmbeddedServer` implements the store's semantics (versions, compare-and-set, leases,
watches) over a :class:`Keyspace`: a plain dict (memory) or RocksDB. Several
:class:`EmbeddedMetadataStore` clients may share one server, as several processes share one
etcd; each client has its own session (lease) and its own watches.

Invariants: a key's version is 0 at creation and +1 per put; an ephemeral key carries the id of
its lease and is deleted when that lease is revoked or expires; watchers see every change in
commit order.

Concurrency: the server is used from one event loop at a time. With an executor (RocksDB) every
mutation runs there, one at a time, under an asyncio lock that also covers publishing its
events, so commit order equals publish order. Without one (memory) every operation is a
synchronous step on the loop. The server has no task of its own: lease expiry is checked at the
start of each operation and on each client's keep-alive tick.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Protocol, TypeVar

from magnetar.metadata.errors import BadVersion, KeyExists, NotFound, SessionExpired, StoreClosed
from magnetar.metadata.lease import LeaseTable
from magnetar.metadata.session import SessionKeeper
from magnetar.metadata.store import (
    EventType,
    SessionEvent,
    Versioned,
    Watch,
    WatchEvent,
    check_key,
    check_prefix,
    check_value,
    check_version,
)
from magnetar.metadata.watch import WatchChannel, WatchHub

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Record:
    """A stored value: its version and the lease it is bound to (0 = persistent)."""

    value: bytes
    version: int
    lease: int = 0


class Keyspace(Protocol):
    """Synchronous storage of records; called from one thread at a time."""

    def get(self, key: str) -> Record | None: ...

    def scan(self, prefix: str) -> list[tuple[str, Record]]:
        """Records whose key starts with ``prefix``, sorted by key."""
        ...

    def write(self, puts: Sequence[tuple[str, Record]], deletes: Sequence[str]) -> None:
        """Apply all ``puts`` and ``deletes`` atomically (and durably, if the keyspace is)."""
        ...

    def close(self) -> None: ...


def _put_event(key: str, record: Record) -> WatchEvent:
    return WatchEvent(EventType.PUT, key, record.value, record.version)


def _delete_event(key: str) -> WatchEvent:
    return WatchEvent(EventType.DELETE, key, None, None)


class EmbeddedServer:
    """Versions, CAS, leases and watches over a keyspace; see the module docstring."""

    def __init__(self, keyspace: Keyspace, *, executor: Executor | None = None) -> None:
        self._keyspace = keyspace
        self._executor = executor
        self._leases = LeaseTable()
        self._hub = WatchHub()
        self._lock = asyncio.Lock() if executor is not None else None

    async def _run(self, fn: Callable[[], T]) -> T:
        if self._executor is None:
            return fn()
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn)

    def _serial(self) -> contextlib.AbstractAsyncContextManager[object]:
        return self._lock if self._lock is not None else contextlib.nullcontext()

    # ---------------------------------------------------------------- leases

    async def grant(self, ttl: float) -> tuple[int, float]:
        return self._leases.grant(ttl, time.monotonic()), ttl

    async def renew(self, lease_id: int) -> bool:
        return self._leases.keepalive(lease_id, time.monotonic())

    async def revoke(self, lease_id: int) -> None:
        async with self._serial():
            await self._drop_lease(lease_id)

    async def sweep(self) -> None:
        """Expire every lease past its deadline, deleting its keys."""
        if not self._leases.due(time.monotonic()):
            return
        async with self._serial():
            for lease_id in self._leases.due(time.monotonic()):
                await self._drop_lease(lease_id)

    async def _drop_lease(self, lease_id: int) -> None:
        keys = sorted(self._leases.revoke(lease_id))
        if not keys:
            return

        def delete_bound() -> list[str]:
            gone = [k for k in keys if (r := self._keyspace.get(k)) and r.lease == lease_id]
            self._keyspace.write((), gone)
            return gone

        gone = await self._run(delete_bound)
        self._hub.publish(_delete_event(k) for k in gone)

    # ---------------------------------------------------------------- key-value

    async def get(self, key: str) -> Versioned | None:
        await self.sweep()
        record = await self._run(lambda: self._keyspace.get(key))
        return None if record is None else Versioned(record.value, record.version)

    async def scan(self, prefix: str) -> list[tuple[str, Versioned]]:
        await self.sweep()
        records = await self._run(lambda: self._keyspace.scan(prefix))
        return [(k, Versioned(r.value, r.version)) for k, r in records]

    async def put(self, key: str, value: bytes, expected_version: int | None) -> int:
        await self.sweep()

        def put() -> Record:
            old = self._keyspace.get(key)
            if expected_version is not None and (old is None or old.version != expected_version):
                raise BadVersion(key, expected_version, None if old is None else old.version)
            new = Record(
                value, 0 if old is None else old.version + 1, 0 if old is None else old.lease
            )
            self._keyspace.write([(key, new)], ())
            return new

        async with self._serial():
            record = await self._run(put)
            self._hub.publish([_put_event(key, record)])
        return record.version

    async def create(self, key: str, value: bytes, lease_id: int) -> int:
        await self.sweep()

        def create() -> Record:
            if self._keyspace.get(key) is not None:
                raise KeyExists(key)
            record = Record(value, 0, lease_id)
            self._keyspace.write([(key, record)], ())
            return record

        async with self._serial():
            if lease_id and not self._leases.alive(lease_id, time.monotonic()):
                raise SessionExpired(f"cannot create ephemeral {key!r}: the session has expired")
            record = await self._run(create)
            if lease_id:
                self._leases.attach(lease_id, key)
            self._hub.publish([_put_event(key, record)])
        return record.version

    async def delete(self, key: str, expected_version: int | None) -> None:
        await self.sweep()

        def delete() -> Record:
            old = self._keyspace.get(key)
            if old is None:
                raise NotFound(key)
            if expected_version is not None and old.version != expected_version:
                raise BadVersion(key, expected_version, old.version)
            self._keyspace.write((), [key])
            return old

        async with self._serial():
            old = await self._run(delete)
            if old.lease:
                self._leases.detach(old.lease, key)
            self._hub.publish([_delete_event(key)])

    def watch(self, prefix: str) -> WatchChannel:
        return self._hub.open(prefix)


class EmbeddedMetadataStore:
    """A client of an :class:`EmbeddedServer` with its own session and watches."""

    def __init__(
        self,
        server: EmbeddedServer,
        *,
        backend: str,
        session_timeout_s: float,
        on_close: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        if session_timeout_s <= 0:
            raise ValueError(f"session_timeout_s must be > 0, got {session_timeout_s}")
        self._server = server
        self._timeout = session_timeout_s
        self._on_close = on_close
        self._closed = False
        self._watches: set[WatchChannel] = set()
        self._session = SessionKeeper(
            backend=backend,
            grant=lambda: server.grant(session_timeout_s),
            renew=server.renew,
            revoke=server.revoke,
            tick=server.sweep,
        )

    async def start(self) -> None:
        await self._session.start()

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosed("metadata store is closed")

    async def get(self, key: str) -> Versioned | None:
        self._check_open()
        return await self._server.get(check_key(key))

    async def put(self, key: str, value: bytes, expected_version: int | None = None) -> int:
        self._check_open()
        check_key(key), check_value(value), check_version(expected_version)
        return await self._server.put(key, value, expected_version)

    async def create(self, key: str, value: bytes, *, ephemeral: bool = False) -> int:
        self._check_open()
        check_key(key), check_value(value)
        lease = self._session.require_lease() if ephemeral else 0
        return await self._server.create(key, value, lease)

    async def delete(self, key: str, expected_version: int | None = None) -> None:
        self._check_open()
        check_key(key), check_version(expected_version)
        await self._server.delete(key, expected_version)

    async def list(self, prefix: str) -> list[tuple[str, Versioned]]:
        self._check_open()
        return await self._server.scan(check_prefix(prefix))

    async def list_keys(self, prefix: str) -> builtins.list[str]:
        return [key for key, _ in await self.list(prefix)]

    def watch(self, prefix: str) -> Watch:
        self._check_open()
        channel = self._server.watch(check_prefix(prefix))
        self._watches = {w for w in self._watches if not w.closed}
        self._watches.add(channel)
        return channel

    def add_session_listener(self, listener: Callable[[SessionEvent], None]) -> None:
        self._session.add_listener(listener)

    def suspend_keepalive(self) -> None:
        """For tests/fault injection: stop renewing the session, as a hung process would."""
        self._session.suspend()

    def resume_keepalive(self) -> None:
        """For tests/fault injection: renew again; a new session starts if the old one expired."""
        self._session.resume()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for channel in list(self._watches):
            await channel.close()
        self._watches.clear()
        await self._session.close()
        if self._on_close is not None:
            await self._on_close()
