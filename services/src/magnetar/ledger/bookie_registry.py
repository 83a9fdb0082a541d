"""Which bookies exist, where they listen, and which are writable; one client per bookie.

:class:`BookieRegistry` mirrors ``keys.BOOKIE_AVAILABLE_PREFIX`` (ephemeral
``BookieRegistration`` values, with each bookie's rack) and ``keys.BOOKIE_DECOMMISSION_PREFIX``
(bookies being decommissioned, never writable): it opens one watch on ``keys.BOOKIES_PREFIX``,
lists it, then applies watch events.
Addresses of bookies that went away are remembered (a reader may still try them; the write path
uses only :meth:`BookieRegistry.writable`). If the watch fails the registry re-lists after a
backoff. :class:`BookiePool` keeps one :class:`BookieClient` per bookie id, rebuilt when the
bookie's address changes, or a :class:`LocalBookieClient` for a bookie running in this process
(``magnetar standalone``), whatever address it registered.

Concurrency: one watcher task owned by the registry (cancelled in :meth:`close`); the query
methods are plain reads, safe from any task on the loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping

from magnetar.backoff import METADATA_WATCH
from magnetar.ids import BookieId
from magnetar.ledger.bookie_client import BookieClient
from magnetar.ledger.config import LedgerClientConfig
from magnetar.ledger.errors import BookieUnavailable, NotEnoughBookies
from magnetar.ledger.local_bookie import InProcessBookie, LocalBookieClient
from magnetar.metadata import EventType, MetadataStore, keys
from magnetar.telemetry import get_logger
from magnetar.wire import ledger_pb2

log = get_logger(__name__)


class BookieRegistry:
    def __init__(self, store: MetadataStore, timeout_s: float = 10.0) -> None:
        self._store = store
        self._timeout_s = timeout_s
        self._addresses: dict[BookieId, str] = {}
        self._available: dict[BookieId, bool] = {}  # bookie -> read_only
        self._racks: dict[BookieId, str] = {}
        self._decommissioning: set[BookieId] = set()
        self._changed = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None
        self._synced = asyncio.Event()

    @classmethod
    async def start(cls, store: MetadataStore, timeout_s: float = 10.0) -> BookieRegistry:
        registry = cls(store, timeout_s)
        registry._task = asyncio.get_running_loop().create_task(
            registry._watch_forever(), name="bookie-registry"
        )
        try:
            async with asyncio.timeout(timeout_s):
                await registry._synced.wait()
        except BaseException:
            await registry.close()
            raise
        return registry

    def available(self) -> frozenset[BookieId]:
        return frozenset(self._available)

    def writable(self) -> frozenset[BookieId]:
        """Available, not read-only and not being decommissioned: what placement may choose."""
        return frozenset(
            b
            for b, read_only in self._available.items()
            if not read_only and b not in self._decommissioning
        )

    def racks(self) -> dict[BookieId, str]:
        """The rack each known bookie registered ("" when it named none)."""
        return dict(self._racks)

    def decommissioning(self) -> frozenset[BookieId]:
        return frozenset(self._decommissioning)

    def address(self, bookie_id: BookieId) -> str | None:
        return self._addresses.get(bookie_id)

    async def wait_for_writable(self, count: int, timeout_s: float) -> frozenset[BookieId]:
        """The writable set once it has ``count`` bookies; :class:`NotEnoughBookies` on timeout."""
        try:
            async with asyncio.timeout(timeout_s), self._changed:
                await self._changed.wait_for(lambda: len(self.writable()) >= count)
        except TimeoutError as exc:
            raise NotEnoughBookies(count, len(self.writable())) from exc
        return self.writable()

    async def _watch_forever(self) -> None:
        # Not retry(): a watch that ended is re-listed and re-watched forever, after a pause.
        backoff = METADATA_WATCH.backoff()
        while True:
            try:
                await self._watch_once()
            except Exception as exc:  # store trouble: re-list after a pause
                log.warning("bookie_registry_watch_failed", error=str(exc))
            await asyncio.sleep(backoff.next())

    async def _watch_once(self) -> None:
        async with self._store.watch(keys.BOOKIES_PREFIX) as watch:
            async with asyncio.timeout(self._timeout_s):
                listed = await self._store.list(keys.BOOKIES_PREFIX)
            self._available.clear()
            self._decommissioning.clear()
            for key, versioned in listed:
                self._apply(key, versioned.value)
            await self._notify()
            self._synced.set()
            async for event in watch:
                self._apply(event.key, event.value if event.type is EventType.PUT else None)
                await self._notify()

    def _apply(self, key: str, value: bytes | None) -> None:
        if key.startswith(keys.BOOKIE_DECOMMISSION_PREFIX):
            decommissioned = keys.bookie_id_of(key)
            if value is None:
                self._decommissioning.discard(decommissioned)
            else:
                self._decommissioning.add(decommissioned)
            return
        if not key.startswith(keys.BOOKIE_AVAILABLE_PREFIX):
            return  # cookies
        bookie_id = keys.bookie_id_of(key)
        if value is None:
            self._available.pop(bookie_id, None)
            log.info("bookie_unregistered", bookie_id=bookie_id)
            return
        registration = ledger_pb2.BookieRegistration()
        try:
            registration.ParseFromString(value)
        except Exception:  # a malformed registration is skipped, not fatal
            log.warning("bookie_registration_unreadable", bookie_id=bookie_id)
            return
        self._addresses[bookie_id] = registration.address
        self._available[bookie_id] = registration.read_only
        self._racks[bookie_id] = registration.rack
        log.info(
            "bookie_registered",
            bookie_id=bookie_id,
            address=registration.address,
            read_only=registration.read_only,
        )

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.wait({self._task})
            self._task = None


class BookiePool:
    """One :class:`BookieClient` per bookie id, created on first use; failed-bookie quarantine.

    A bookie that failed a write is kept out of new ensembles and replacements for
    ``bookie_quarantine_s`` (its registration may outlive a crash by a session timeout).
    """

    def __init__(
        self,
        registry: BookieRegistry,
        config: LedgerClientConfig,
        local: Mapping[BookieId, InProcessBookie] | None = None,
    ) -> None:
        self._registry = registry
        self._config = config
        self._local = dict(local or {})
        self._local_clients: dict[BookieId, LocalBookieClient] = {}
        self._clients: dict[BookieId, BookieClient] = {}
        self._retired: list[BookieClient] = []
        self._quarantine: dict[BookieId, float] = {}

    def quarantine(self, bookie_id: BookieId) -> None:
        self._quarantine[bookie_id] = time.monotonic() + self._config.bookie_quarantine_s

    def quarantined(self) -> frozenset[BookieId]:
        now = time.monotonic()
        for bookie, until in list(self._quarantine.items()):
            if until <= now:
                del self._quarantine[bookie]
        return frozenset(self._quarantine)

    def client(self, bookie_id: BookieId) -> BookieClient | LocalBookieClient:
        if bookie_id in self._local:
            local = self._local_clients.get(bookie_id)
            if local is None:
                local = LocalBookieClient(bookie_id, self._local[bookie_id], self._config)
                self._local_clients[bookie_id] = local
            return local
        address = self._registry.address(bookie_id)
        current = self._clients.get(bookie_id)
        if current is not None and (address is None or address == current.address):
            return current
        if address is None:
            raise BookieUnavailable(bookie_id, "no known address (never registered)")
        if current is not None:
            self._retired.append(current)  # closed with the pool; may still be draining
        client = BookieClient(bookie_id, address, self._config)
        self._clients[bookie_id] = client
        return client

    async def close(self) -> None:
        clients: list[BookieClient | LocalBookieClient] = [
            *self._clients.values(),
            *self._retired,
            *self._local_clients.values(),
        ]
        self._clients.clear()
        self._local_clients.clear()
        self._retired.clear()
        await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)
