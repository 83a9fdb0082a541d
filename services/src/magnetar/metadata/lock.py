"""A distributed lock on the MetadataStore: an ephemeral key at ``keys.lock(name)``.

Acquire creates the key ephemeral (bound to the store's session); whoever created it holds the
lock. A waiter watches the holder's key and retries when it is deleted, which happens on
release, on the holder's ``close`` or when the holder's session expires. The lock is lost with
the session: after :class:`SessionEvent.EXPIRED` ``held`` is False and the holder must stop
acting under it. Built only on the MetadataStore protocol, so it works on every backend.

Concurrency: one lock object per holder, used from one task at a time.
"""

from __future__ import annotations

import uuid
from types import TracebackType

from magnetar.metadata import keys
from magnetar.metadata.errors import BadVersion, KeyExists, NotFound
from magnetar.metadata.store import EventType, MetadataStore, SessionEvent
from magnetar.telemetry import get_logger

log = get_logger(__name__)


async def wait_until_deleted(store: MetadataStore, key: str) -> None:
    """Return once ``key`` does not exist (no timeout: callers bound it)."""
    async with store.watch(key) as watch:
        if await store.get(key) is None:
            return
        async for event in watch:
            if event.key == key and event.type is EventType.DELETE:
                return


class DistributedLock:
    """A named mutual-exclusion lock across every client of a metadata store."""

    def __init__(self, store: MetadataStore, name: str, value: bytes | None = None) -> None:
        self._store = store
        self.name = name
        self.key = keys.lock(name)
        self._value = value if value is not None else uuid.uuid4().hex.encode()
        self._version: int | None = None
        store.add_session_listener(self._on_session)

    @property
    def held(self) -> bool:
        return self._version is not None

    def _on_session(self, event: SessionEvent) -> None:
        if event is SessionEvent.EXPIRED and self._version is not None:
            log.warning("metadata_lock_lost", lock=self.name)
            self._version = None

    async def acquire(self) -> None:
        """Wait until this client holds the lock (bound it with ``asyncio.timeout``)."""
        if self.held:
            raise RuntimeError(f"lock {self.name!r} is already held by this object")
        while True:
            try:
                self._version = await self._store.create(self.key, self._value, ephemeral=True)
                log.debug("metadata_lock_acquired", lock=self.name)
                return
            except KeyExists:
                # Our own earlier create may have landed though its reply was lost.
                current = await self._store.get(self.key)
                if current is not None and current.value == self._value:
                    self._version = current.version
                    return
                await wait_until_deleted(self._store, self.key)

    async def try_acquire(self) -> bool:
        """Take the lock if free, without waiting."""
        try:
            self._version = await self._store.create(self.key, self._value, ephemeral=True)
        except KeyExists:
            return False
        return True

    async def release(self) -> None:
        """Release the lock if still held (a no-op if the session already lost it)."""
        version, self._version = self._version, None
        if version is None:
            return
        try:
            await self._store.delete(self.key, expected_version=version)
        except (NotFound, BadVersion):
            log.warning("metadata_lock_already_gone", lock=self.name)

    async def __aenter__(self) -> DistributedLock:
        await self.acquire()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.release()
