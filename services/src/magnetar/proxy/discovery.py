"""Which brokers are registered: the proxy's view of ``/loadbalance/brokers``.

Brokers register an ephemeral key each (``keys.broker_registration(host:port)``) holding
their advertised ``pulsarServiceUrl`` and ``webServiceUrl`` among their load report, and the
``brokerServiceUrl`` of each named listener under ``advertisedListeners`` (the JSON that
:class:`magnetar.broker.broker_registry.BrokerLookupData` writes; the proxy reads only those
URL fields, so it never imports the broker). A client that looked up through a named listener
names that listener's address in ``proxy_to_broker_url``: it identifies the same broker.

:class:`BrokerDiscovery` keeps the set current from a watch of that prefix, re-listing after
every (re)start of the watch, and calls its listeners with a broker's id when its key
disappears, so that relays to a broker that left the cluster (crashed and lost its lease, or
shut down) are closed at once.

Invariants: the lookups (:meth:`BrokerDiscovery.by_service_address` ...) answer from the last
listing plus the watch's events; :meth:`BrokerDiscovery.refresh` lists again on demand, at most
once per :data:`REFRESH_INTERVAL_S` (bogus addresses from clients cannot hammer the store). A
broker id is ``host:port`` of its binary listener, as the client names it in
``proxy_to_broker_url``. Concurrency: one watch task on the proxy's loop, owned here and
cancelled by :meth:`BrokerDiscovery.close`; the reads are synchronous.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Callable
from dataclasses import dataclass

from magnetar.backoff import METADATA_WATCH
from magnetar.cancellation import cancel_and_wait
from magnetar.metadata import keys
from magnetar.metadata.errors import MetadataError
from magnetar.metadata.store import EventType, MetadataStore
from magnetar.proxy.errors import NoBrokerAvailable
from magnetar.telemetry import get_logger

log = get_logger(__name__)

BrokerGone = Callable[[str], None]
REFRESH_INTERVAL_S = 1.0


@dataclass(frozen=True, slots=True)
class RegisteredBroker:
    """One broker as its registration key names it."""

    broker_id: str  # host:port of the binary listener
    pulsar_service_url: str
    web_service_url: str
    listener_addresses: frozenset[str] = frozenset()  # host:port of named listeners' pulsar URLs
    pulsar_service_url_tls: str = ""  # "" when the broker serves no TLS port
    web_service_url_tls: str = ""

    @property
    def service_address(self) -> str:
        """``host:port`` the proxy dials (the default listener, inside the cluster)."""
        return address_of(self.pulsar_service_url)

    @property
    def web_address(self) -> str:
        return self.web_service_url.split("://", 1)[-1]

    @classmethod
    def from_json(cls, broker_id: str, raw: bytes) -> RegisteredBroker:
        data = json.loads(raw)
        listeners = data.get("advertisedListeners") or {}
        named = {
            address_of(str(doc[field]))
            for doc in listeners.values()
            if isinstance(doc, dict)
            for field in ("brokerServiceUrl", "brokerServiceUrlTls")
            if doc.get(field)
        }
        return cls(
            broker_id,
            str(data["pulsarServiceUrl"]),
            str(data["webServiceUrl"]),
            frozenset(named),
            str(data.get("pulsarServiceUrlTls") or ""),
            str(data.get("webServiceUrlTls") or ""),
        )

    @property
    def tls_address(self) -> str | None:
        """``host:port`` of the broker's TLS listener, None when it serves none."""
        return address_of(self.pulsar_service_url_tls) if self.pulsar_service_url_tls else None

    def answers_at(self, address: str) -> bool:
        """Whether ``address`` (``host:port``) is one of this broker's binary listeners."""
        return (
            address == self.service_address
            or address == self.tls_address
            or address in self.listener_addresses
        )


def address_of(url: str) -> str:
    """``pulsar://h:p`` or ``http://h:p/`` -> ``h:p``."""
    return url.split("://", 1)[-1].rstrip("/")


class BrokerDiscovery:
    """The registered brokers, kept current by a watch (module docstring)."""

    def __init__(self, store: MetadataStore, rng: random.Random | None = None) -> None:
        self._store = store
        self._brokers: dict[str, RegisteredBroker] = {}
        self._listeners: list[BrokerGone] = []
        self._rng = rng or random.Random()
        self._task: asyncio.Task[None] | None = None
        self._listed = asyncio.Event()
        self._refreshed_at = -REFRESH_INTERVAL_S
        self._refreshing = asyncio.Lock()

    async def start(self) -> None:
        """Start watching; returns once the first listing is in."""
        self._task = asyncio.create_task(self._watch(), name="proxy-broker-discovery")
        await self._listed.wait()

    async def close(self) -> None:
        await cancel_and_wait(self._task)

    def on_broker_gone(self, listener: BrokerGone) -> None:
        self._listeners.append(listener)

    @property
    def brokers(self) -> list[RegisteredBroker]:
        return sorted(self._brokers.values(), key=lambda b: b.broker_id)

    def by_service_address(self, address: str) -> RegisteredBroker | None:
        """The broker with a ``pulsar://`` listener at ``address`` (``host:port``), if any."""
        return next((b for b in self._brokers.values() if b.answers_at(address)), None)

    def by_web_address(self, address: str) -> RegisteredBroker | None:
        """The broker whose ``http://`` or ``https://`` web service is at ``address``."""
        return next(
            (
                b
                for b in self._brokers.values()
                if address in (b.web_address, address_of(b.web_service_url_tls))
            ),
            None,
        )

    async def refresh(self) -> None:
        """List the registry now (a broker that registered a moment ago may not have reached
        the watch yet); a store that does not answer leaves the view as it was."""
        async with self._refreshing:
            now = asyncio.get_running_loop().time()
            if now - self._refreshed_at < REFRESH_INTERVAL_S:
                return
            self._refreshed_at = now
            try:
                await self._relist()
            except MetadataError as exc:
                log.warning("proxy_discovery_refresh_failed", error=str(exc))

    def any_broker(self) -> RegisteredBroker:
        """A registered broker picked at random (spreads the proxy's lookups)."""
        if not self._brokers:
            raise NoBrokerAvailable()
        return self._rng.choice(list(self._brokers.values()))

    async def _watch(self) -> None:
        backoff = METADATA_WATCH.backoff()
        while True:
            try:
                async with self._store.watch(keys.BROKERS_PREFIX) as watch:
                    await self._relist()
                    backoff.reset()
                    async for event in watch:
                        broker_id = keys.broker_id_of(event.key)
                        if event.type is EventType.DELETE or event.value is None:
                            self._forget(broker_id)
                        else:
                            self._learn(broker_id, event.value)
            except MetadataError as exc:
                log.warning("proxy_discovery_watch_failed", error=str(exc))
            await asyncio.sleep(backoff.next())

    async def _relist(self) -> None:
        found: dict[str, RegisteredBroker] = {}
        for key, versioned in await self._store.list(keys.BROKERS_PREFIX):
            broker = self._parse(keys.broker_id_of(key), versioned.value)
            if broker is not None:
                found[broker.broker_id] = broker
        gone = set(self._brokers) - set(found)
        self._brokers = found
        self._listed.set()
        log.info("proxy_brokers_listed", brokers=sorted(found))
        for broker_id in gone:
            self._notify(broker_id)

    def _learn(self, broker_id: str, raw: bytes) -> None:
        broker = self._parse(broker_id, raw)
        if broker is not None:
            if broker_id not in self._brokers:
                log.info("proxy_broker_registered", broker=broker_id)
            self._brokers[broker_id] = broker

    def _forget(self, broker_id: str) -> None:
        if self._brokers.pop(broker_id, None) is not None:
            log.info("proxy_broker_unregistered", broker=broker_id)
            self._notify(broker_id)

    def _notify(self, broker_id: str) -> None:
        for listener in self._listeners:
            listener(broker_id)

    @staticmethod
    def _parse(broker_id: str, raw: bytes) -> RegisteredBroker | None:
        try:
            return RegisteredBroker.from_json(broker_id, raw)
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("broker_registration_unreadable", broker=broker_id, error=repr(exc))
            return None
