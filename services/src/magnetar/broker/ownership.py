"""Ownership of namespace bundles, and the lookup answer that follows from it.

A broker serves a topic only while it owns the topic's bundle (:mod:`.bundles`). Two
implementations of the :class:`Ownership` protocol:

- :class:`LocalOwnership` (the standalone): the only broker owns every bundle; a lookup always
  answers "connect here" (through the service URL when it advertises a loopback address, as
  Pulsar's standalone does: :func:`proxy_through_service_url`).
- :class:`BundleOwnership` (a cluster on etcd): a bundle is owned through an ephemeral key at
  ``keys.bundle_owner(...)`` (Pulsar's ``/namespace/{tenant}/{ns}/{bundle}``) holding Pulsar's
  NamespaceEphemeralData JSON. A lookup of an owned bundle answers Connect to the owner; of an
  unowned one, the placement (:class:`~.load_manager.BundlePlacement`: the load manager, which
  routes the decision through its leader) names a broker: this broker acquires the bundle and
  answers Connect, another one gets a Redirect (``authoritative=true`` to the chosen broker,
  ``false`` to the leader); a broker asked authoritatively acquires the bundle itself (no
  loops).

Invariants (cluster):

- The local table of owned bundles is cleared, synchronously, when the store reports
  :class:`~magnetar.metadata.store.SessionEvent.EXPIRED`. The session keeper reports that at a
  local deadline (a fraction of the TTL after the last acknowledged keep-alive) that falls before
  the server can expire the lease, so this broker refuses new producers and consumers and starts
  closing the bundle's topics before any other broker can create the owner key. Writes still in
  flight when the bundle moves are stopped by BookKeeper fencing: the new owner's managed-ledger
  recovery fences the old ledger, and a managed-ledger metadata update by the old owner fails its
  compare-and-set. So no two brokers ever append to the same managed ledger.
- Unloading (admin, or SIGTERM) marks the bundle releasing (refusing new clients), closes its
  topics (clients get CLOSE_PRODUCER / CLOSE_CONSUMER and look up again), and only then deletes
  the owner key.
- This broker's owner key exists a moment before the acquire records the bundle as owned (it
  still checks the boundaries). So a lookup or :meth:`Ownership.owner` of a bundle whose
  acquire is running waits for that acquire instead of reading the key: reading it would
  answer "being unloaded" for a bundle that is being taken.
- Bundle boundaries come from the :class:`~magnetar.broker.bundle_factory.NamespaceBundleFactory`
  (stored per namespace; its cache is a hint). This broker serves a topic when an owned bundle
  holds the topic's hash, so serving needs no read of the boundaries. A bundle is acquired only
  if it is still a current bundle on a fresh read AFTER its owner key was created; a stale one
  (split meanwhile) is given up at once and the lookup is redone (:class:`StaleBundle`). So an
  owned bundle never overlaps another broker's.
- Splitting (only the owner splits): the owner keys of both halves are created first, then the
  boundaries are updated with a compare-and-set, then the halves replace the bundle in the local
  table and the old owner key is deleted. Until the compare-and-set nobody can look a half up;
  after it, both halves already have their owner. Topics stay loaded (no client notices) unless
  the split unloads the halves.

Concurrency: on the broker's loop. Lookups and the admin call :meth:`Ownership.lookup` and
:meth:`Ownership.unload`; the broker service calls :meth:`Ownership.check_owned` before it
serves a topic. Topic closes after a session loss run as tasks the ownership owns and awaits in
:meth:`Ownership.close`.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import ipaddress
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol
from urllib.parse import urlsplit

from magnetar.broker.broker_registry import BrokerLookupData, BrokerRegistry
from magnetar.broker.bundle_factory import NamespaceBundleFactory
from magnetar.broker.bundles import (
    BundleRange,
    NamespaceBundle,
    NamespaceBundles,
    bundle_holding,
)
from magnetar.broker.errors import ServiceNotReady, StaleBundle
from magnetar.broker.listeners import AdvertisedListener, UnknownListener
from magnetar.broker.load_manager import BundlePlacement, SharedReportsPlacement
from magnetar.metadata import keys
from magnetar.metadata.errors import BadVersion, KeyExists, MetadataError, NotFound
from magnetar.metadata.store import MetadataStore, SessionEvent
from magnetar.naming import NamespaceName, TopicName
from magnetar.telemetry import get_logger

log = get_logger(__name__)


@dataclass(frozen=True, slots=True)
class LookupResult:
    """Where a client must go for a topic: Connect (``redirect=False``) or Redirect.

    ``proxy_through_service_url`` (Connect only) tells the client to keep the broker as the
    logical address but reach it through the service URL it was given (a proxy or a load
    balancer in front of the broker): see :func:`proxy_through_service_url`.
    """

    pulsar_service_url: str
    web_service_url: str
    redirect: bool = False
    authoritative: bool = True
    proxy_through_service_url: bool = False
    broker: BrokerLookupData | None = field(default=None, compare=False)
    # The owner's TLS URLs, "" when it serves no TLS port (Pulsar's brokerServiceUrlTls).
    pulsar_service_url_tls: str = ""
    web_service_url_tls: str = ""

    @classmethod
    def connect(cls, broker: BrokerLookupData, proxy_through: bool = False) -> LookupResult:
        return cls(
            broker.pulsar_service_url,
            broker.web_service_url,
            proxy_through_service_url=proxy_through,
            broker=broker,
            pulsar_service_url_tls=broker.pulsar_service_url_tls,
            web_service_url_tls=broker.web_service_url_tls,
        )

    @classmethod
    def redirect_to(cls, broker: BrokerLookupData, authoritative: bool = True) -> LookupResult:
        return cls(
            broker.pulsar_service_url,
            broker.web_service_url,
            True,
            authoritative,
            broker=broker,
            pulsar_service_url_tls=broker.pulsar_service_url_tls,
            web_service_url_tls=broker.web_service_url_tls,
        )

    def web_url(self, https: bool) -> str:
        """The owner's web URL for a request that came over HTTPS (``https``) or plain HTTP:
        its ``https://`` URL when it has one for an HTTPS request, else its ``http://`` one."""
        if https and self.web_service_url_tls:
            return self.web_service_url_tls
        return self.web_service_url

    def for_listener(self, name: str | None) -> LookupResult:
        """The same answer with the named listener's URLs (:mod:`.listeners`); None or an empty
        name keeps the default addresses. UnknownListener if the broker lacks the listener."""
        if not name:
            return self
        broker = self.broker
        found = broker.advertised_listeners.get(name) if broker is not None else None
        if found is None:
            raise UnknownListener(name, broker.broker_id if broker is not None else "?")
        pulsar_url = found.broker_service_url or found.broker_service_url_tls
        assert pulsar_url is not None  # parse_advertised_listeners requires one
        return replace(
            self,
            pulsar_service_url=pulsar_url,
            web_service_url=found.broker_http_url or self.web_service_url,
            pulsar_service_url_tls=found.broker_service_url_tls or "",
            web_service_url_tls=found.broker_https_url or "",
        )


class BundleTopics(Protocol):
    """What ownership needs from the broker service: close every loaded topic of a bundle."""

    async def close_bundle_topics(self, bundle: NamespaceBundle) -> int: ...


class Ownership(Protocol):
    """Which bundles this broker serves, and the lookup answers (see the module docstring)."""

    @property
    def bundle_factory(self) -> NamespaceBundleFactory: ...

    async def bundles(self, namespace: NamespaceName) -> NamespaceBundles:
        """The namespace's current bundles (read fresh)."""
        ...

    def check_owned(self, topic: TopicName) -> None:
        """Raise :class:`ServiceNotReady` unless this broker serves ``topic``'s bundle."""

    async def lookup(self, topic: TopicName, authoritative: bool) -> LookupResult: ...

    async def owner(self, bundle: NamespaceBundle) -> LookupResult | None:
        """The broker that owns ``bundle`` now, or None when nobody does."""
        ...

    async def unload(self, bundle: NamespaceBundle) -> bool:
        """Close the bundle's topics and give it up; False when this broker does not own it."""
        ...

    async def split(
        self, bundle: NamespaceBundle, boundary: int, unload: bool
    ) -> tuple[NamespaceBundle, NamespaceBundle] | None:
        """Cut an owned (or unowned, then acquired) bundle at ``boundary``; the halves, then
        unloaded with ``unload``. None when another broker owns it."""
        ...

    async def close(self) -> None:
        """Give up every bundle (SIGTERM): topics closed first, then the owner keys."""


def not_served(topic: TopicName, broker_id: str) -> ServiceNotReady:
    """Pulsar's refusal, which makes the official client look the topic up again."""
    return ServiceNotReady(
        f"Namespace bundle for topic ({topic}) not served by this instance:{broker_id}. "
        f"Please redo the lookup. Request is denied: namespace={topic.namespace}"
    )


def proxy_through_service_url(running_standalone: bool, broker_url: str) -> bool:
    """Pulsar's rule for the Connect answer's proxy-through flag.

    Pulsar's broker sets the flag only when it runs standalone and advertises a loopback
    address: the client then reaches it through the service URL it was given (e.g. a port
    mapped into a container) instead of an address that only means something inside. A broker
    of a cluster never sets it, whatever the CONNECT said (``proxy_to_broker_url`` and
    ``original_principal`` serve authentication and the proxy's own routing, not the answer):
    the proxy answers its clients' lookups itself. A host name other than ``localhost`` is not
    resolved (no DNS on the loop), so only literal loopback addresses count.
    """
    if not running_standalone:
        return False
    host = urlsplit(broker_url).hostname
    if host is None:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def owner_record(broker: BrokerLookupData) -> bytes:
    """Pulsar's NamespaceEphemeralData JSON, the value of an owner key (with the owner's named
    listeners, so any broker can answer a lookup for a listener name)."""
    return json.dumps(
        {
            "nativeUrl": broker.pulsar_service_url,
            "nativeUrlTls": broker.pulsar_service_url_tls,
            "httpUrl": broker.web_service_url,
            "httpUrlTls": broker.web_service_url_tls,
            "disabled": False,
            "advertisedListeners": {
                name: listener.to_json() for name, listener in broker.advertised_listeners.items()
            },
        },
        sort_keys=True,
    ).encode()


def owner_of_record(raw: bytes) -> LookupResult:
    data = json.loads(raw)
    native, http = str(data["nativeUrl"]), str(data["httpUrl"])
    owner = BrokerLookupData(
        broker_id=native.split("://", 1)[-1],
        pulsar_service_url=native,
        web_service_url=http,
        advertised_listeners={
            str(name): AdvertisedListener.from_json(doc)
            for name, doc in (data.get("advertisedListeners") or {}).items()
        },
        pulsar_service_url_tls=str(data.get("nativeUrlTls") or ""),
        web_service_url_tls=str(data.get("httpUrlTls") or ""),
    )
    return LookupResult(
        native,
        http,
        broker=owner,
        pulsar_service_url_tls=owner.pulsar_service_url_tls,
        web_service_url_tls=owner.web_service_url_tls,
    )


def halves(bundle: NamespaceBundle, boundary: int) -> tuple[NamespaceBundle, NamespaceBundle]:
    """``bundle`` cut at ``boundary``; ValueError unless the boundary is strictly inside."""
    r = bundle.range
    if not r.lower < boundary < r.upper:
        raise ValueError(f"split boundary {boundary:#x} is not inside {bundle}")
    return (
        NamespaceBundle(bundle.namespace, BundleRange(r.lower, boundary)),
        NamespaceBundle(bundle.namespace, BundleRange(boundary, r.upper)),
    )


class LocalOwnership:
    """The standalone's ownership: this broker serves every bundle."""

    def __init__(
        self, me: BrokerLookupData, topics: BundleTopics, factory: NamespaceBundleFactory
    ) -> None:
        self._me = me
        self._topics = topics
        self._factory = factory
        self._here = LookupResult.connect(
            me, proxy_through_service_url(running_standalone=True, broker_url=me.pulsar_service_url)
        )

    @property
    def bundle_factory(self) -> NamespaceBundleFactory:
        return self._factory

    async def bundles(self, namespace: NamespaceName) -> NamespaceBundles:
        return await self._factory.bundles(namespace, fresh=True)

    def check_owned(self, topic: TopicName) -> None:
        return None

    async def lookup(self, topic: TopicName, authoritative: bool) -> LookupResult:
        return self._here

    async def owner(self, bundle: NamespaceBundle) -> LookupResult | None:
        return self._here

    async def unload(self, bundle: NamespaceBundle) -> bool:
        await self._topics.close_bundle_topics(bundle)
        return True

    async def split(
        self, bundle: NamespaceBundle, boundary: int, unload: bool
    ) -> tuple[NamespaceBundle, NamespaceBundle]:
        low, high = await self._factory.split(bundle, boundary)
        if unload:
            await self.unload(bundle)  # the halves' topics are the bundle's
        return low, high

    async def close(self) -> None:
        return None


class _State(enum.Enum):
    OWNED = "owned"
    SPLITTING = "splitting"  # still served; replaced by its halves when the split succeeds
    RELEASING = "releasing"


@dataclass(slots=True)
class _Owned:
    version: int
    state: _State = _State.OWNED


class BundleOwnership:
    """Cluster ownership through ephemeral owner keys (see the module docstring)."""

    def __init__(
        self,
        store: MetadataStore,
        registry: BrokerRegistry,
        topics: BundleTopics,
        factory: NamespaceBundleFactory,
        placement: BundlePlacement | None = None,
    ) -> None:
        self._store = store
        self._placement = placement or SharedReportsPlacement(store)
        self._registry = registry
        self._topics = topics
        self._factory = factory
        self._owned: dict[NamespaceBundle, _Owned] = {}
        self._acquiring: dict[NamespaceBundle, asyncio.Task[LookupResult]] = {}
        self._closing_lost: set[asyncio.Task[None]] = set()
        self._stopping = False
        store.add_session_listener(self._on_session)

    @property
    def me(self) -> BrokerLookupData:
        return self._registry.data

    @property
    def bundle_factory(self) -> NamespaceBundleFactory:
        return self._factory

    @property
    def owned(self) -> Sequence[NamespaceBundle]:
        """Bundles served now (not those being released)."""
        return [b for b, o in self._owned.items() if o.state is not _State.RELEASING]

    async def bundles(self, namespace: NamespaceName) -> NamespaceBundles:
        return await self._factory.bundles(namespace, fresh=True)

    def owns(self, bundle: NamespaceBundle) -> bool:
        owned = self._owned.get(bundle)
        return owned is not None and owned.state is not _State.RELEASING

    def _served_bundle(self, topic: TopicName) -> NamespaceBundle | None:
        """The owned bundle that holds ``topic``, if any (no read of the boundaries)."""
        served = (b for b, o in self._owned.items() if o.state is not _State.RELEASING)
        return bundle_holding(served, topic)

    def check_owned(self, topic: TopicName) -> None:
        if self._served_bundle(topic) is None:
            raise not_served(topic, self.me.broker_id)

    # ------------------------------------------------------------------ lookup
    async def lookup(self, topic: TopicName, authoritative: bool) -> LookupResult:
        """One answer; a bundle found split meanwhile is looked up again on fresh boundaries."""
        for _ in range(2):
            try:
                return await self._lookup_once(topic, authoritative)
            except StaleBundle:
                continue  # the failed check refreshed the cached boundaries
        return await self._lookup_once(topic, authoritative)

    async def _lookup_once(self, topic: TopicName, authoritative: bool) -> LookupResult:
        if self._served_bundle(topic) is not None:
            return LookupResult.connect(self.me)
        bundle = (await self._factory.bundles(topic.namespace)).find(topic)
        if self.owns(bundle):
            return LookupResult.connect(self.me)
        acquiring = self._acquiring.get(bundle)
        if acquiring is not None:  # our owner key may exist before the bundle is recorded
            return await asyncio.shield(acquiring)
        current = await self._other_owner(bundle)
        if current is not None:
            return current
        if authoritative and not self._stopping:
            return await self._acquire(bundle)
        placed = await self._placement.place(bundle, self.me, exclude_me=self._stopping)
        if placed is None:
            raise ServiceNotReady(f"no broker is available to serve {bundle}")
        if placed.authoritative and placed.target.broker_id == self.me.broker_id:
            return await self._acquire(bundle)
        log.debug("lookup_redirect", bundle=str(bundle), target=placed.target.broker_id)
        return LookupResult.redirect_to(placed.target, placed.authoritative)

    async def owner(self, bundle: NamespaceBundle) -> LookupResult | None:
        acquiring = self._acquiring.get(bundle)
        if acquiring is not None:  # its outcome, not its half-done owner key, is the answer
            await asyncio.wait([acquiring])
        if self.owns(bundle):
            return LookupResult.connect(self.me)
        return await self._stored_owner(bundle)

    async def _stored_owner(self, bundle: NamespaceBundle) -> LookupResult | None:
        """The owner key's broker, as stored (one read)."""
        found = await self._store.get(self._key(bundle))
        return None if found is None else owner_of_record(found.value)

    async def _other_owner(self, bundle: NamespaceBundle) -> LookupResult | None:
        """The stored owner of a bundle this broker does not serve; ServiceNotReady when the
        key is this broker's own (the bundle is being released)."""
        owner = await self._stored_owner(bundle)
        if owner is not None and owner.pulsar_service_url == self.me.pulsar_service_url:
            # Our key, but not served here: it is being released (or was, before a crash).
            raise ServiceNotReady(f"Namespace bundle {bundle} is being unloaded")
        return owner

    async def _acquire(self, bundle: NamespaceBundle) -> LookupResult:
        task = self._acquiring.get(bundle)
        if task is None:
            task = asyncio.create_task(self._create_owner_key(bundle), name=f"acquire-{bundle}")
            self._acquiring[bundle] = task
            task.add_done_callback(lambda _t: self._acquiring.pop(bundle, None))
        return await asyncio.shield(task)

    async def _create_owner_key(self, bundle: NamespaceBundle) -> LookupResult:
        try:
            version = await self._store.create(
                self._key(bundle), owner_record(self.me), ephemeral=True
            )
        except KeyExists:
            winner = await self._stored_owner(bundle)
            if winner is None:
                raise ServiceNotReady(f"Failed to acquire ownership of {bundle}") from None
            return winner
        except MetadataError as exc:
            raise ServiceNotReady(f"Failed to acquire ownership of {bundle}: {exc}") from exc
        if not await self._factory.bundle_of(bundle):  # split meanwhile: give it up at once
            with contextlib.suppress(MetadataError):
                await self._store.delete(self._key(bundle), expected_version=version)
            log.info("stale_bundle_released", bundle=str(bundle))
            raise StaleBundle(str(bundle))
        self._owned[bundle] = _Owned(version)
        log.info("bundle_acquired", bundle=str(bundle), broker=self.me.broker_id)
        await self._registry.report_load(len(self._owned))
        return LookupResult.connect(self.me)

    def _key(self, bundle: NamespaceBundle) -> str:
        ns = bundle.namespace
        return keys.bundle_owner(ns.tenant, ns.local_name, bundle.name)

    # ------------------------------------------------------------------ release
    async def unload(self, bundle: NamespaceBundle) -> bool:
        owned = self._owned.get(bundle)
        if owned is not None and owned.state is _State.SPLITTING:
            raise ServiceNotReady(f"Namespace bundle {bundle} is being split")
        if owned is None or owned.state is not _State.OWNED:
            return False
        owned.state = _State.RELEASING
        try:
            closed = await self._topics.close_bundle_topics(bundle)
            if self._owned.get(bundle) is owned:  # not lost to a session expiry meanwhile
                try:
                    await self._store.delete(self._key(bundle), expected_version=owned.version)
                except (NotFound, BadVersion):
                    log.warning("bundle_owner_key_already_gone", bundle=str(bundle))
        finally:
            if self._owned.get(bundle) is owned:
                del self._owned[bundle]
        log.info("bundle_unloaded", bundle=str(bundle), topics=closed)
        await self._registry.report_load(len(self._owned))
        return True

    # ------------------------------------------------------------------ split
    async def split(
        self, bundle: NamespaceBundle, boundary: int, unload: bool
    ) -> tuple[NamespaceBundle, NamespaceBundle] | None:
        low, high = halves(bundle, boundary)
        if not self.owns(bundle):
            if self._stopping or await self._other_owner(bundle) is not None:
                return None
            acquired = await self._acquire(bundle)  # unowned: take it, then split it
            if acquired.pulsar_service_url != self.me.pulsar_service_url:
                return None
        owned = self._owned.get(bundle)
        if owned is None or owned.state is not _State.OWNED:
            raise ServiceNotReady(f"Namespace bundle {bundle} is being split or unloaded")
        owned.state = _State.SPLITTING
        created: list[tuple[NamespaceBundle, int]] = []
        try:
            record = owner_record(self.me)
            for half in (low, high):
                version = await self._store.create(self._key(half), record, ephemeral=True)
                created.append((half, version))
            await self._factory.split(bundle, boundary)
        except BaseException as exc:
            for half, version in created:
                with contextlib.suppress(MetadataError):
                    await self._store.delete(self._key(half), expected_version=version)
            if self._owned.get(bundle) is owned:
                owned.state = _State.OWNED
            if isinstance(exc, KeyExists):
                raise ServiceNotReady(f"Failed to split {bundle}: a half is owned") from exc
            raise
        if self._owned.get(bundle) is owned:  # not lost to a session expiry meanwhile
            del self._owned[bundle]
            for half, version in created:
                self._owned[half] = _Owned(version)
            try:
                await self._store.delete(self._key(bundle), expected_version=owned.version)
            except (NotFound, BadVersion):
                log.warning("bundle_owner_key_already_gone", bundle=str(bundle))
            await self._registry.report_load(len(self._owned))
        if unload:
            for half in (low, high):
                await self.unload(half)
        return low, high

    async def close(self) -> None:
        """Stop taking bundles, release every owned one, wait for post-expiry closes."""
        self._stopping = True
        for task in list(self._acquiring.values()):
            await asyncio.wait([task])
        for bundle in list(self._owned):
            try:
                await self.unload(bundle)
            except (
                MetadataError,
                ServiceNotReady,
            ) as exc:  # e.g. being split: ends with the session
                log.warning("bundle_unload_failed", bundle=str(bundle), error=str(exc))
        if self._closing_lost:
            await asyncio.wait(set(self._closing_lost))

    # ------------------------------------------------------------------ session loss
    def _on_session(self, event: SessionEvent) -> None:
        if event is not SessionEvent.EXPIRED or not self._owned:
            return
        lost = list(self._owned)
        self._owned.clear()  # from now on every new producer / consumer is refused
        log.warning("bundle_ownership_lost", bundles=[str(b) for b in lost])
        task = asyncio.create_task(self._close_lost(lost), name="close-lost-bundles")
        self._closing_lost.add(task)
        task.add_done_callback(self._closing_lost.discard)

    async def _close_lost(self, lost: list[NamespaceBundle]) -> None:
        for bundle in lost:
            try:
                await self._topics.close_bundle_topics(bundle)
            except Exception as exc:
                log.error("bundle_close_failed", bundle=str(bundle), error=repr(exc))
        await self._registry.report_load(len(self._owned))
