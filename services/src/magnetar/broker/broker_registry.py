"""The broker registry: which brokers are alive, where to reach them, and how loaded they are.

Every broker of a cluster registers an ephemeral key at ``keys.broker_registration(host:port)``
(Pulsar's ``/loadbalance/brokers/{host:port}``) holding :class:`BrokerLookupData`: its advertised
``pulsar://`` and ``http://`` URLs and its load report (:class:`~.load_report.LoadReport`, Pulsar's
LocalBrokerData field names), rewritten by the load reporter every
``load_balancer_report_update_interval_s`` and after every bundle acquired or released. The key
lives as long as the broker's metadata session, so a crashed broker drops out of the
registry once its lease expires; a broker whose session expired registers again as soon as a new
session is live.

Invariants: one live key per advertised address. A broker that finds the key held by another
session waits up to ``wait_s`` (a crashed predecessor's lease running out) and is then refused
with :class:`BrokerAlreadyRegistered`, so two brokers never share an address. Only the owning
broker writes its key, and only with a compare-and-set on the version it last wrote. Writes go
one at a time (a lock), each carrying the latest report: a burst of acquires writes the key at
most twice instead of once each, and no write fails the compare-and-set against its sibling.

Concurrency: on the broker's loop. The process entry point registers at start and unregisters
at stop; ownership (:mod:`.ownership`) reports its bundle count after every acquire or release;
the load reporter (:mod:`.load_reporter`) publishes the full report periodically; the load
manager (:mod:`.load_manager`) reads every live broker's report. Re-registration after a session
loss runs as a task that the registry owns and cancels in :meth:`BrokerRegistry.close`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from magnetar.broker.errors import BrokerError
from magnetar.broker.listeners import AdvertisedListener
from magnetar.broker.load_report import LoadReport
from magnetar.cancellation import cancel_and_wait
from magnetar.metadata import keys
from magnetar.metadata.errors import BadVersion, KeyExists, MetadataError, NotFound
from magnetar.metadata.lock import wait_until_deleted
from magnetar.metadata.store import MetadataStore, SessionEvent
from magnetar.telemetry import get_logger

log = get_logger(__name__)


class BrokerAlreadyRegistered(BrokerError):
    """Another live broker advertises the same address; this one must not start."""

    def __init__(self, broker_id: str, waited_s: float) -> None:
        super().__init__(
            f"a broker with advertised address {broker_id} is already registered "
            f"(waited {waited_s:g}s for it to go away); give this broker another "
            "advertised address or port"
        )
        self.broker_id = broker_id


@dataclass(frozen=True, slots=True)
class BrokerLookupData:
    """What a broker publishes about itself (JSON field names after Pulsar's LocalBrokerData)."""

    broker_id: str
    pulsar_service_url: str
    web_service_url: str
    load: LoadReport = field(default_factory=LoadReport)
    advertised_listeners: Mapping[str, AdvertisedListener] = field(default_factory=dict, hash=False)
    # The TLS URLs ("" without a TLS port): pulsar+ssl:// on brokerServicePortTls, https:// on
    # webServicePortTls (Pulsar's pulsarServiceUrlTls and webServiceUrlTls).
    pulsar_service_url_tls: str = ""
    web_service_url_tls: str = ""

    @property
    def num_bundles(self) -> int:
        return self.load.num_bundles

    @property
    def web_address(self) -> str:
        """``host:port`` of the web service: how Pulsar's admin API names a broker."""
        return self.web_service_url.split("://", 1)[-1]

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "pulsarServiceUrl": self.pulsar_service_url,
                "pulsarServiceUrlTls": self.pulsar_service_url_tls,
                "webServiceUrl": self.web_service_url,
                "webServiceUrlTls": self.web_service_url_tls,
                "advertisedListeners": {
                    name: listener.to_json() for name, listener in self.advertised_listeners.items()
                },
                **self.load.to_json(),
            },
            sort_keys=True,
        ).encode()

    @classmethod
    def from_json(cls, broker_id: str, raw: bytes) -> BrokerLookupData:
        data = json.loads(raw)
        return cls(
            broker_id=broker_id,
            pulsar_service_url=str(data["pulsarServiceUrl"]),
            web_service_url=str(data["webServiceUrl"]),
            load=LoadReport.from_json(data),
            advertised_listeners={
                str(name): AdvertisedListener.from_json(doc)
                for name, doc in (data.get("advertisedListeners") or {}).items()
            },
            pulsar_service_url_tls=str(data.get("pulsarServiceUrlTls") or ""),
            web_service_url_tls=str(data.get("webServiceUrlTls") or ""),
        )


async def live_brokers(store: MetadataStore) -> list[BrokerLookupData]:
    """Every registered broker, sorted by id; an unreadable entry is skipped (and logged)."""
    found = []
    for key, versioned in await store.list(keys.BROKERS_PREFIX):
        broker_id = keys.broker_id_of(key)
        try:
            found.append(BrokerLookupData.from_json(broker_id, versioned.value))
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("broker_registration_unreadable", broker=broker_id, error=repr(exc))
    return found


class BrokerRegistry:
    """This broker's registration: register, report load, unregister (module docstring)."""

    def __init__(self, store: MetadataStore, data: BrokerLookupData, *, wait_s: float) -> None:
        self._store = store
        self._data = data
        self._wait_s = wait_s
        self._key = keys.broker_registration(data.broker_id)
        self._version: int | None = None
        self._written: BrokerLookupData | None = None  # what the key holds at ``_version``
        self._writing = asyncio.Lock()
        self._closed = False
        self._reregister: asyncio.Task[None] | None = None
        store.add_session_listener(self._on_session)

    @property
    def data(self) -> BrokerLookupData:
        return self._data

    @property
    def registered(self) -> bool:
        return self._version is not None

    async def register(self) -> None:
        """Create the key; wait out a dead predecessor's lease, refuse a live twin."""
        value = self._data.to_json()
        try:
            self._version = await self._store.create(self._key, value, ephemeral=True)
        except KeyExists:
            try:
                async with asyncio.timeout(self._wait_s):
                    await wait_until_deleted(self._store, self._key)
            except TimeoutError:
                raise BrokerAlreadyRegistered(self._data.broker_id, self._wait_s) from None
            self._version = await self._store.create(self._key, value, ephemeral=True)
        self._written = self._data
        log.info("broker_registered", broker=self._data.broker_id)

    async def report_load(self, num_bundles: int) -> None:
        """Publish the number of bundles this broker owns now (the rest of the report as it was)."""
        await self.publish(self._data.load.with_num_bundles(num_bundles))

    async def publish(self, report: LoadReport) -> None:
        """Publish ``report`` (best effort: logged on failure, the next report retries).

        Writes are serialised and each writes the latest data, so a call that waited for
        another's write returns at once when that write already carried its report."""
        self._data = replace(self._data, load=report)
        async with self._writing:
            data = self._data
            if self._version is None or data == self._written:
                return
            try:
                self._version = await self._store.put(
                    self._key, data.to_json(), expected_version=self._version
                )
                self._written = data
            except MetadataError as exc:
                log.warning("broker_load_report_failed", broker=data.broker_id, error=str(exc))

    async def unregister(self) -> None:
        """Delete the key, so that lookups stop choosing this broker."""
        self._closed = True
        await cancel_and_wait(self._reregister)
        async with self._writing:  # after a write in flight, so the delete sees its version
            version, self._version = self._version, None
            if version is None:
                return
            with contextlib.suppress(NotFound, BadVersion):
                await self._store.delete(self._key, expected_version=version)
        log.info("broker_unregistered", broker=self._data.broker_id)

    async def close(self) -> None:
        await self.unregister()

    def _on_session(self, event: SessionEvent) -> None:
        if event is SessionEvent.EXPIRED:
            self._version = None
        elif event is SessionEvent.RECONNECTED and not self._closed and not self._reregistering:
            self._reregister = asyncio.create_task(self._register_again(), name="broker-reregister")

    @property
    def _reregistering(self) -> bool:
        return self._reregister is not None and not self._reregister.done()

    async def _register_again(self) -> None:
        try:
            await self.register()
        except (BrokerError, MetadataError) as exc:
            log.error("broker_reregister_failed", broker=self._data.broker_id, error=str(exc))
