"""The load manager: one elected leader places unowned bundles and sheds overloaded brokers.

Every broker of a cluster runs a :class:`LoadManager`. One of them is the **leader**, elected
through Pulsar's key ``keys.LOAD_BALANCE_LEADER`` (``/loadbalance/leader``, ephemeral, holding
Pulsar's LeaderBroker JSON plus the leader's binary URL) with
:class:`~magnetar.metadata.election.LeaderElection`.

Placement (:meth:`LoadManager.place`, asked by :mod:`.ownership` for a non-authoritative
lookup of an unowned bundle), as in Pulsar:

- a broker that is not the leader answers with the leader (a Redirect, ``authoritative=false``),
  so that one broker decides and a burst of lookups does not pile onto one broker whose report
  is a few seconds old;
- the leader (or any broker while there is no leader, or when the leader key names itself)
  chooses the live broker with the lowest :func:`~.load_report.broker_score`, counting the
  bundles it has just assigned to a broker until that broker's bundle count changes
  (:class:`PendingAssignments`); ties go to the fewest bundles, then the smallest id. The
  chosen broker gets a Redirect with ``authoritative=true`` (and then acquires the bundle), or
  the leader acquires it itself.

Lookups cannot loop: an authoritative lookup is never redirected, and a broker redirects to the
leader only when the leader key names another broker.

Shedding (the leader only, every ``shedding_interval_s`` once ``shedding_grace_period_s`` has
passed since it was elected): :func:`~.load_shedding.bundles_to_unload` picks at most one
bundle per overloaded broker; the leader writes an unload request for the owner
(``keys.unload_request``, ephemeral under the leader's session), which the owner's load
reporter carries out (:mod:`.load_reporter`). A bundle shed once is not shed again within the
grace period.

Concurrency: on the broker's loop. :meth:`start` starts the election and the shedding task,
:meth:`close` cancels the task and resigns; lookups call :meth:`place` from their own tasks.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from magnetar.broker.broker_registry import BrokerLookupData, live_brokers
from magnetar.broker.bundles import NamespaceBundle
from magnetar.broker.listeners import AdvertisedListener
from magnetar.broker.load_report import broker_score
from magnetar.broker.load_shedding import bundles_to_unload
from magnetar.cancellation import cancel_and_wait
from magnetar.metadata import keys
from magnetar.metadata.election import LeaderElection
from magnetar.metadata.errors import KeyExists, MetadataError
from magnetar.metadata.store import MetadataStore
from magnetar.telemetry import get_logger

log = get_logger(__name__)

ELECTION = "loadbalance-leader"


@dataclass(frozen=True, slots=True)
class LoadManagerConfig:
    """The load manager's settings (broker.conf names in :mod:`.settings`)."""

    report_interval_s: float = 10.0
    shedding_enabled: bool = True
    shedding_interval_s: float = 60.0
    shedding_grace_period_s: float = 60.0
    threshold_percentage: float = 10.0


@dataclass(frozen=True, slots=True)
class LeaderBroker:
    """Pulsar's LeaderBroker (``brokerId``, ``serviceUrl``), plus the binary URL, the named
    listeners and the TLS URLs ("" without TLS) for redirects."""

    broker_id: str
    service_url: str
    pulsar_service_url: str
    advertised_listeners: Mapping[str, AdvertisedListener] = field(default_factory=dict, hash=False)
    service_url_tls: str = ""
    pulsar_service_url_tls: str = ""

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "brokerId": self.broker_id,
                "serviceUrl": self.service_url,
                "pulsarServiceUrl": self.pulsar_service_url,
                "serviceUrlTls": self.service_url_tls,
                "pulsarServiceUrlTls": self.pulsar_service_url_tls,
                "advertisedListeners": {
                    n: listener.to_json() for n, listener in self.advertised_listeners.items()
                },
            },
            sort_keys=True,
        ).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> LeaderBroker:
        data = json.loads(raw)
        listeners = {
            str(n): AdvertisedListener.from_json(doc)
            for n, doc in (data.get("advertisedListeners") or {}).items()
        }
        return cls(
            str(data["brokerId"]),
            str(data["serviceUrl"]),
            str(data["pulsarServiceUrl"]),
            listeners,
            str(data.get("serviceUrlTls") or ""),
            str(data.get("pulsarServiceUrlTls") or ""),
        )

    @classmethod
    def of(cls, broker: BrokerLookupData) -> LeaderBroker:
        return cls(
            broker.broker_id,
            broker.web_service_url,
            broker.pulsar_service_url,
            dict(broker.advertised_listeners),
            broker.web_service_url_tls,
            broker.pulsar_service_url_tls,
        )

    def as_lookup_data(self) -> BrokerLookupData:
        return BrokerLookupData(
            self.broker_id,
            self.pulsar_service_url,
            self.service_url,
            advertised_listeners=self.advertised_listeners,
            pulsar_service_url_tls=self.pulsar_service_url_tls,
            web_service_url_tls=self.service_url_tls,
        )


async def current_leader(store: MetadataStore) -> LeaderBroker | None:
    """The load manager's leader now, or None (no leader, or an unreadable record)."""
    found = await store.get(keys.LOAD_BALANCE_LEADER)
    if found is None:
        return None
    try:
        return LeaderBroker.from_json(found.value)
    except (ValueError, KeyError, TypeError) as exc:
        log.warning("load_leader_unreadable", error=repr(exc))
        return None


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a lookup of an unowned bundle goes: ``target`` takes it (``authoritative``), or
    ``target`` is the leader, asked to decide (not ``authoritative``)."""

    target: BrokerLookupData
    authoritative: bool = True


class BundlePlacement(Protocol):
    """Chooses the broker for an unowned bundle (see the module docstring)."""

    async def place(
        self, bundle: NamespaceBundle, me: BrokerLookupData, *, exclude_me: bool
    ) -> Placement | None:
        """None when no broker can take it."""
        ...


class PendingAssignments:
    """Bundles the leader has just assigned, counted against their broker until its published
    bundle count changes (it acquired or released something) or ``ttl_s`` passes."""

    def __init__(self, ttl_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl_s = ttl_s
        self._clock = clock
        self._by_bundle: dict[NamespaceBundle, tuple[str, int, float]] = {}

    def add(self, bundle: NamespaceBundle, broker: BrokerLookupData) -> None:
        self._by_bundle[bundle] = (broker.broker_id, broker.num_bundles, self._clock())

    def counts(self, brokers: Iterable[BrokerLookupData]) -> dict[str, int]:
        seen = {b.broker_id: b.num_bundles for b in brokers}
        now = self._clock()
        counts: dict[str, int] = {}
        for bundle, (broker_id, num_bundles, at) in list(self._by_bundle.items()):
            if seen.get(broker_id) != num_bundles or now - at > self._ttl_s:
                del self._by_bundle[bundle]
            else:
                counts[broker_id] = counts.get(broker_id, 0) + 1
        return counts


def choose_broker(
    brokers: Iterable[BrokerLookupData], pending: Mapping[str, int] | None = None
) -> BrokerLookupData | None:
    """The least loaded broker: lowest score, then fewest bundles, then smallest id."""
    extra = pending or {}
    return min(
        brokers,
        key=lambda b: (
            broker_score(b.load, extra.get(b.broker_id, 0)),
            b.num_bundles,
            b.broker_id,
        ),
        default=None,
    )


class SharedReportsPlacement:
    """No leader: every broker chooses from the same registry (tests and the fallback)."""

    def __init__(self, store: MetadataStore) -> None:
        self._store = store

    async def place(
        self, bundle: NamespaceBundle, me: BrokerLookupData, *, exclude_me: bool
    ) -> Placement | None:
        brokers = await live_brokers(self._store)
        if exclude_me:
            brokers = [b for b in brokers if b.broker_id != me.broker_id]
        target = choose_broker(brokers)
        return None if target is None else Placement(target)


class LoadManager:
    """Leader election, placement and shedding for one broker (module docstring)."""

    def __init__(
        self, store: MetadataStore, me: BrokerLookupData, config: LoadManagerConfig
    ) -> None:
        self._store = store
        self._me = me
        self._config = config
        self._election = LeaderElection(
            store, ELECTION, LeaderBroker.of(me).to_json(), key=keys.LOAD_BALANCE_LEADER
        )
        self._pending = PendingAssignments(ttl_s=max(2 * config.report_interval_s, 5.0))
        self._recently_shed: dict[str, float] = {}
        self._task: asyncio.Task[None] | None = None

    @property
    def config(self) -> LoadManagerConfig:
        return self._config

    @property
    def is_leader(self) -> bool:
        return self._election.is_leader

    def start(self) -> None:
        self._election.start()
        if self._task is None and self._config.shedding_enabled:
            self._task = asyncio.create_task(self._shed_forever(), name="load-shedding")

    async def close(self) -> None:
        """Stop shedding and resign, so that another broker leads (idempotent)."""
        await cancel_and_wait(self._task)
        self._task = None
        await self._election.close()

    async def leader(self) -> LeaderBroker | None:
        return await current_leader(self._store)

    # ------------------------------------------------------------------ placement
    async def place(
        self, bundle: NamespaceBundle, me: BrokerLookupData, *, exclude_me: bool
    ) -> Placement | None:
        if not self.is_leader:
            leader = await self.leader()
            if leader is not None and leader.broker_id != me.broker_id:
                return Placement(leader.as_lookup_data(), authoritative=False)
        brokers = await live_brokers(self._store)
        if exclude_me:
            brokers = [b for b in brokers if b.broker_id != me.broker_id]
        target = choose_broker(brokers, self._pending.counts(brokers))
        if target is None:
            return None
        self._pending.add(bundle, target)
        log.debug("bundle_placed", bundle=str(bundle), target=target.broker_id)
        return Placement(target)

    # ------------------------------------------------------------------ shedding
    async def _shed_forever(self) -> None:
        await self._election.wait_until_leader()
        led_since = time.monotonic()
        while True:
            await asyncio.sleep(self._config.shedding_interval_s)
            if not self.is_leader:
                await self._election.wait_until_leader()
                led_since = time.monotonic()
                continue
            if time.monotonic() - led_since < self._config.shedding_grace_period_s:
                continue
            try:
                await self.shed_once()
            except MetadataError as exc:
                log.warning("load_shedding_failed", error=str(exc))

    async def shed_once(self) -> list[tuple[str, str]]:
        """One round of shedding: the (broker, bundle) unload requests written."""
        now = time.monotonic()
        grace = self._config.shedding_grace_period_s
        self._recently_shed = {b: t for b, t in self._recently_shed.items() if now - t < grace}
        brokers = await live_brokers(self._store)
        busy = {
            b.broker_id
            for b in brokers
            if await self._store.list_keys(keys.unload_requests_prefix(b.broker_id))
        }
        decisions = bundles_to_unload(
            brokers, self._config.threshold_percentage, frozenset(self._recently_shed), busy
        )
        written = []
        for broker_id, bundle in decisions:
            with contextlib.suppress(KeyExists):
                request = keys.unload_request(broker_id, bundle)
                await self._store.create(request, self._me.broker_id.encode(), ephemeral=True)
                self._recently_shed[bundle] = now
                written.append((broker_id, bundle))
                log.info("load_shedding_unload_requested", broker=broker_id, bundle=bundle)
        return written
