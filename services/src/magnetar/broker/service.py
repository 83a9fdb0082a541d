"""BrokerService: the broker's topics by name, lookup answers, and the seam to ownership.

It composes :class:`~magnetar.broker.topic_admin.TopicAdmin` (``service.admin``, the admin's
``TopicService``), which sees it only through the ``BrokerTopics`` protocol. Callers: the
connections (:mod:`.connection` and its request handlers) load topics and answer lookups here;
the admin app is given ``service.admin``; the process entry point builds and closes it.

Topics load on first use (auto-creation): a persistent topic opens (or creates) the managed
ledger named from the topic; a non-persistent one is just an in-memory fan-out. Concurrent
first uses of one topic share a single load. A topic is served only while this broker owns its
namespace bundle: the service's :class:`~magnetar.broker.ownership.Ownership` (every bundle for
the standalone, ephemeral owner keys in a cluster) answers lookups and refuses the others with
ServiceNotReady, and closes a bundle's topics through :meth:`BrokerService.close_bundle_topics`.

Partition counts come from the resources (``BrokerResources.get_partitions``); a topic is
auto-created only in an existing namespace (else TopicNotFound).

Concurrency: on the broker's loop. The service owns its load tasks and its topics and closes
them in :meth:`close`; only the service writes into ``topics``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from magnetar.broker.backlog_quota import BacklogQuotaConfig, BacklogQuotaManager
from magnetar.broker.broker_registry import BrokerLookupData
from magnetar.broker.bundle_factory import NamespaceBundleFactory
from magnetar.broker.bundles import DEFAULT_NUMBER_OF_NAMESPACE_BUNDLES, NamespaceBundle
from magnetar.broker.compaction.threshold import CompactionMonitor
from magnetar.broker.deduplication import DeduplicationConfig
from magnetar.broker.errors import NamespaceNotFound, ServiceNotReady, TopicNotFound
from magnetar.broker.listeners import AdvertisedListener
from magnetar.broker.message_expiry import MessageExpiryMonitor
from magnetar.broker.namespace_policy_watch import NamespacePolicyWatch
from magnetar.broker.non_persistent_topic import NonPersistentTopic
from magnetar.broker.ownership import BundleTopics, LocalOwnership, LookupResult, Ownership
from magnetar.broker.persistence import apply_persistence, with_persistence
from magnetar.broker.persistent_topic import PersistentTopic
from magnetar.broker.policy_defaults import (
    BrokerPolicyDefaults,
    effective_auto_topic_creation,
    effective_delayed_delivery,
    effective_retention,
    with_retention,
)
from magnetar.broker.replication import RemoteClusters, ReplicationContext, ReplicatorConfig
from magnetar.broker.resources import BrokerResources
from magnetar.broker.schemas import SchemaRegistry
from magnetar.broker.security import BrokerSecurity, SecurityConfig
from magnetar.broker.topic_admin import AnyTopic, TopicAdmin
from magnetar.broker.topic_sweep import sweep_once
from magnetar.managed_ledger import InitialPosition, ManagedLedgerConfig, ManagedLedgerFactory
from magnetar.metadata import keys
from magnetar.metadata.store import MetadataStore
from magnetar.naming import NamespaceName, TopicName
from magnetar.policies import Policies
from magnetar.schema import SchemaData, Strategy
from magnetar.telemetry import get_logger

log = get_logger(__name__)

SERVER_VERSION = "Magnetar-0.1.0"


@dataclass(frozen=True)
class BrokerConfig:
    """The broker's settings (names after Pulsar's broker.conf)."""

    advertised_address: str = "127.0.0.1"
    advertised_listeners: Mapping[str, AdvertisedListener] = field(default_factory=dict)
    broker_service_port: int = 6650
    web_service_port: int = 8080
    # brokerServicePortTls / webServicePortTls: None when the broker serves no TLS port.
    broker_service_port_tls: int | None = None
    web_service_port_tls: int | None = None
    cluster_name: str = "standalone"
    max_message_size: int = 5 * 1024 * 1024
    keep_alive_interval_s: float = 30.0
    max_pending_sends_per_connection: int = 10_000
    managed_ledger: ManagedLedgerConfig = field(default_factory=ManagedLedgerConfig)
    close_timeout_s: float = 10.0
    deduplication: DeduplicationConfig = field(default_factory=DeduplicationConfig)
    backlog_quota: BacklogQuotaConfig = field(default_factory=BacklogQuotaConfig)
    stats_window_s: float = 60.0  # statsUpdateFrequencyInSecs: the window of the stats' rates
    policy_defaults: BrokerPolicyDefaults = field(default_factory=BrokerPolicyDefaults)
    default_number_of_namespace_bundles: int = DEFAULT_NUMBER_OF_NAMESPACE_BUNDLES
    delayed_delivery_max_index_size: int = 1_000_000  # per subscription (see dispatch.delayed)
    security: SecurityConfig = field(default_factory=SecurityConfig)
    replicator: ReplicatorConfig = field(default_factory=ReplicatorConfig)
    replication_start_at: InitialPosition = InitialPosition.LATEST  # replicationStartAt


OwnershipFactory = Callable[[BundleTopics, NamespaceBundleFactory], Ownership]


def broker_lookup_data(config: BrokerConfig) -> BrokerLookupData:
    """A broker's id (advertised ``host:port``) and URLs, from its config."""
    host, port = config.advertised_address, config.broker_service_port
    return BrokerLookupData(
        broker_id=f"{host}:{port}",
        pulsar_service_url=f"pulsar://{host}:{port}",
        web_service_url=f"http://{host}:{config.web_service_port}",
        advertised_listeners=dict(config.advertised_listeners),
        pulsar_service_url_tls=(
            ""
            if config.broker_service_port_tls is None
            else f"pulsar+ssl://{host}:{config.broker_service_port_tls}"
        ),
        web_service_url_tls=(
            ""
            if config.web_service_port_tls is None
            else f"https://{host}:{config.web_service_port_tls}"
        ),
    )


class BrokerService:
    def __init__(
        self,
        store: MetadataStore,
        factory: ManagedLedgerFactory,
        config: BrokerConfig,
        resources: BrokerResources,
        ownership: OwnershipFactory | None = None,
        remotes: RemoteClusters | None = None,
    ) -> None:
        self.store = store
        self.factory = factory
        self.config = config
        self.resources = resources
        self.topics: dict[str, AnyTopic] = {}
        self._loading: dict[str, asyncio.Task[AnyTopic]] = {}
        self._closed = False
        self.backlog_quota = BacklogQuotaManager(
            lambda: self.topics.values(), resources.get_policies, config.backlog_quota
        )
        self.policy_watch = NamespacePolicyWatch(store, self._sync_namespace_policies)
        self.message_expiry = MessageExpiryMonitor(
            lambda: self.topics.values(), resources.get_policies, config.policy_defaults
        )
        self.compaction_monitor = CompactionMonitor(
            lambda: self.topics.values(), resources.get_policies, config.policy_defaults
        )
        self.admin = TopicAdmin(
            self, config.policy_defaults, config.stats_window_s, config.managed_ledger
        )
        self.security = BrokerSecurity(config.security, resources)
        self.replication = ReplicationContext(
            config.cluster_name,
            remotes,
            resources.get_cluster,
            resources.get_partitions,
            config.replicator,
            config.replication_start_at,
            self._schema_at,
        )
        self.schemas = SchemaRegistry(
            store, resources, Strategy(config.policy_defaults.schema_compatibility_strategy)
        )
        self.bundle_factory = NamespaceBundleFactory(
            store, config.default_number_of_namespace_bundles
        )
        self.ownership: Ownership = (
            LocalOwnership(self.lookup_data, self, self.bundle_factory)
            if ownership is None
            else ownership(self, self.bundle_factory)
        )

    # ------------------------------------------------------------------ urls / lookup
    @property
    def broker_service_url(self) -> str:
        return f"pulsar://{self.config.advertised_address}:{self.config.broker_service_port}"

    @property
    def broker_service_url_tls(self) -> str:
        """``pulsar+ssl://host:port``, or "" when the broker serves no TLS port."""
        return self.lookup_data.pulsar_service_url_tls

    @property
    def web_service_url(self) -> str:
        return f"http://{self.config.advertised_address}:{self.config.web_service_port}"

    @property
    def lookup_data(self) -> BrokerLookupData:
        """How this broker is registered and named in lookup answers (``host:port``)."""
        return broker_lookup_data(self.config)

    async def lookup(self, topic: TopicName, authoritative: bool) -> LookupResult:
        """Where ``topic`` is served: Connect to its owner, or Redirect (see :mod:`.ownership`)."""
        return await self.ownership.lookup(topic, authoritative)

    async def partitions(self, topic: TopicName) -> int:
        if topic.is_partition:
            return 0
        return await self.resources.get_partitions(topic)

    # ------------------------------------------------------------------ topics
    def loaded(self, topic: TopicName) -> AnyTopic | None:
        found = self.topics.get(str(topic))
        return found if found is not None and found.is_open else None

    async def get_topic(
        self, topic: TopicName, *, create: bool = True, by_client: bool = False
    ) -> AnyTopic:
        """The loaded topic, loading (and with ``create`` creating) it on first use.
        ``by_client`` (a producer or consumer): create only where the effective
        ``allowAutoTopicCreation`` allows it, or ``topic`` is a partition of a partitioned
        topic; else TopicNotFound, as Pulsar answers."""
        if self._closed:
            raise ServiceNotReady("broker is shutting down")
        self.ownership.check_owned(topic)
        found = self.loaded(topic)
        if found is not None:
            return found
        key = str(topic)
        task = self._loading.get(key)
        if task is None:
            task = asyncio.create_task(self._load(topic, create, by_client), name=f"load-{key}")
            self._loading[key] = task
            task.add_done_callback(lambda _t: self._loading.pop(key, None))
        return await asyncio.shield(task)

    async def _load(self, topic: TopicName, create: bool, by_client: bool) -> AnyTopic:
        loaded: AnyTopic
        if topic.is_persistent:
            name = topic.managed_ledger_name
            exists = await self.factory.exists(name)
            if not exists and not create:
                raise TopicNotFound(str(topic))
            # One read of the namespace serves the existence check, retention and dedup.
            policies = await self._namespace_policies(topic.namespace)
            if policies is None:
                if not exists:
                    raise TopicNotFound(str(topic))
                policies = Policies()  # a ledger left behind by a deleted namespace
            if not exists and by_client:
                await self._check_auto_creation(topic, policies)
            ml = await self.factory.open(name, self.managed_ledger_config_for(policies))
            loaded = PersistentTopic(
                topic,
                ml,
                deduplication=self.config.deduplication,
                delayed_delivery=effective_delayed_delivery(policies, self.config.policy_defaults),
                max_delayed=self.config.delayed_delivery_max_index_size,
                replication=self.replication,
            )
            await self._apply_load_policies(loaded, policies)
        else:
            policies = await self._namespace_policies(topic.namespace) if create else None
            if policies is None:
                raise TopicNotFound(str(topic))
            if by_client:
                await self._check_auto_creation(topic, policies)
            loaded = NonPersistentTopic(topic)
        if self._closed:
            await loaded.close()
            raise ServiceNotReady("broker is shutting down")
        try:
            self.ownership.check_owned(topic)  # the bundle may have gone while loading
        except ServiceNotReady:
            await loaded.close()
            raise
        self.topics[str(topic)] = loaded
        self._start_quota_and_policy_checks()
        self.message_expiry.start()
        self.compaction_monitor.start()
        log.info("topic_loaded", topic=str(topic))
        return loaded

    async def _schema_at(self, topic: TopicName, version: int) -> SchemaData | None:
        """``topic``'s schema at ``version`` (None: deleted), for its replicators."""
        return (await self.schemas.version(topic, version)).schema

    async def _check_auto_creation(self, topic: TopicName, policies: Policies) -> None:
        """TopicNotFound unless a client may create ``topic``: the namespace's
        autoTopicCreation (else the broker's allowAutoTopicCreation) allows it, or it is a
        partition of an existing partitioned topic."""
        auto = effective_auto_topic_creation(policies, self.config.policy_defaults)
        if auto.allow_auto_topic_creation:
            return
        if topic.is_partition:
            partitions = await self.resources.get_partitions(topic.partitioned_topic_name)
            if topic.partition_index < partitions:
                return
        raise TopicNotFound(str(topic))

    async def topic_exists(self, topic: TopicName) -> bool:
        """``topic`` is loaded here, or (persistent) has a managed ledger: one metadata read
        at most."""
        if self.loaded(topic) is not None:
            return True
        return topic.is_persistent and await self.factory.exists(topic.managed_ledger_name)

    def managed_ledger_config_for(self, policies: Policies) -> ManagedLedgerConfig:
        """The broker's managed-ledger config with ``policies``' effective retention and
        persistence (ensemble and quorums)."""
        retention = effective_retention(policies, self.config.policy_defaults)
        default = self.config.managed_ledger
        return with_persistence(with_retention(default, retention), policies.persistence, default)

    async def list_topics(self, namespace: NamespaceName, persistent: bool = True) -> list[str]:
        """Topics of ``namespace`` (persistent: every managed ledger, loaded or not)."""
        names: set[str] = set()
        if persistent:
            prefix = f"{namespace}/persistent/"
            for key in await self.store.list_keys(keys.MANAGED_LEDGER_INFO_PREFIX):
                ml_name = keys.managed_ledger_name_of(key)
                if ml_name.startswith(prefix):
                    names.add(str(TopicName.from_managed_ledger_name(ml_name)))
        for name, topic in self.topics.items():
            if topic.name.namespace == namespace and topic.name.is_persistent == persistent:
                names.add(name)
        return sorted(names)

    async def unload_topic(self, topic: TopicName) -> None:
        """Close the topic here (clients reconnect and load it again); 404 if it does not exist."""
        found = self.topics.pop(str(topic), None)
        if found is not None:
            await found.close()
        elif not topic.is_persistent or not await self.factory.exists(topic.managed_ledger_name):
            raise TopicNotFound(str(topic))

    async def close_bundle_topics(self, bundle: NamespaceBundle) -> int:
        """Close every loaded topic of ``bundle`` (clients reconnect after a lookup); the count.

        Loads already under way finish first: their topic would otherwise escape the close
        (``_load`` re-checks ownership, which the caller has already given up or is releasing).
        """
        loading = [t for key, t in self._loading.items() if bundle.includes(TopicName.parse(key))]
        if loading:
            await asyncio.wait(loading, timeout=self.config.close_timeout_s)
        names = [name for name, t in self.topics.items() if bundle.includes(t.name)]
        for name in names:
            topic = self.topics.pop(name, None)
            if topic is None:
                continue
            try:
                async with asyncio.timeout(self.config.close_timeout_s):
                    await topic.close()
            except Exception as exc:
                log.warning("topic_close_failed", topic=name, error=repr(exc))
        return len(names)

    # ------------------------------------------------------------------ policies / backlog quota
    def _start_quota_and_policy_checks(self) -> None:
        self.backlog_quota.start()
        self.policy_watch.start()

    async def _namespace_policies(self, ns: NamespaceName) -> Policies | None:
        try:
            return await self.resources.get_policies(ns)
        except NamespaceNotFound:
            return None

    async def _apply_load_policies(self, topic: PersistentTopic, policies: Policies) -> None:
        """Recover the topic's deduplication state and start its replicators before anyone can
        publish to it."""
        try:
            await topic.update_deduplication(policies.deduplication_enabled)
            await topic.update_replication(policies.replication_clusters)
        except BaseException:
            await topic.close()
            raise

    async def _sync_namespace_policies(self) -> None:
        """Apply each namespace's deduplicationEnabled, delayedDelivery, persistence and
        replication_clusters (its topics' replicators) to its loaded persistent topics
        (whichever broker's admin API changed them)."""
        defaults = self.config.policy_defaults

        async def apply(topic: PersistentTopic, policies: Policies) -> None:
            topic.delayed_delivery = effective_delayed_delivery(policies, defaults)
            apply_persistence(topic.ml, policies.persistence, self.config.managed_ledger)
            await topic.update_deduplication(policies.deduplication_enabled)
            await topic.update_replication(policies.replication_clusters)

        await sweep_once(
            "namespace-policy-sync", self.topics.values(), self.resources.get_policies, apply
        )

    async def close(self) -> None:
        self._closed = True
        await self.backlog_quota.close()
        await self.policy_watch.close()
        await self.message_expiry.close()
        await self.compaction_monitor.close()
        for task in list(self._loading.values()):
            await asyncio.wait([task], timeout=self.config.close_timeout_s)
        topics = list(self.topics.values())
        self.topics.clear()
        for topic in topics:
            try:
                async with asyncio.timeout(self.config.close_timeout_s):
                    await topic.close()
            except Exception as exc:
                log.warning("topic_close_failed", topic=str(topic.name), error=repr(exc))
        log.info("broker_service_closed", topics=len(topics))
