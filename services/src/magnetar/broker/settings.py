"""The broker's settings object (pydantic-settings, env prefix ``MAGNETAR_BROKER_``).

Built once by ``magnetar broker`` from its flags over the environment, then passed down; no
module reads the environment itself. The standalone's
:class:`~magnetar.standalone.StandaloneSettings` extends it under its own prefix. Names follow
Pulsar's broker.conf where a Pulsar operator would look (``brokerServicePort`` ->
``broker_port``, ``advertisedAddress`` -> ``advertised_address``,
``managedLedgerDefaultEnsembleSize`` -> ``managed_ledger_default_ensemble_size``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import SettingsConfigDict

from magnetar.authentication.settings import (
    AuthenticationSettings,
    BookkeeperClientAuthenticationSettings,
    CommaList,
    split_commas,
)
from magnetar.broker.backlog_quota import BacklogQuotaConfig
from magnetar.broker.bundle_split import BundleSplitConfig
from magnetar.broker.deduplication import DeduplicationConfig
from magnetar.broker.listeners import parse_advertised_listeners
from magnetar.broker.load_manager import LoadManagerConfig
from magnetar.broker.policy_defaults import BrokerPolicyDefaults
from magnetar.broker.replication import ReplicatorConfig
from magnetar.broker.security import SecurityConfig
from magnetar.broker.service import BrokerConfig
from magnetar.managed_ledger import InitialPosition, ManagedLedgerConfig
from magnetar.policies import AutoTopicCreationOverride, DelayedDeliveryPolicies, RetentionPolicies
from magnetar.tls.settings import (
    BookkeeperClientTlsSettings,
    MetadataStoreTlsSettings,
    ServerTlsSettings,
)


class BrokerSettings(
    ServerTlsSettings,
    BookkeeperClientTlsSettings,
    MetadataStoreTlsSettings,
    AuthenticationSettings,
    BookkeeperClientAuthenticationSettings,
):
    model_config = SettingsConfigDict(env_prefix="MAGNETAR_BROKER_", frozen=True)

    metadata_url: str = "etcd://127.0.0.1:2379"
    broker_port: int = Field(default=6650, ge=0, le=65535)
    web_port: int = Field(default=8080, ge=0, le=65535)
    bind_address: str = "127.0.0.1"
    advertised_address: str = "127.0.0.1"
    # advertisedListeners (PIP-61): "name:pulsar://host:port,name:http://host:port,..."
    advertised_listeners: str = ""
    cluster_name: str = "standalone"
    managed_ledger_default_ensemble_size: int = Field(default=3, ge=1)
    managed_ledger_default_write_quorum: int = Field(default=3, ge=1)
    managed_ledger_default_ack_quorum: int = Field(default=2, ge=1)
    # The largest persistence policy a namespace may set (Pulsar's defaults).
    managed_ledger_max_ensemble_size: int = Field(default=5, ge=1)
    managed_ledger_max_write_quorum: int = Field(default=5, ge=1)
    managed_ledger_max_ack_quorum: int = Field(default=5, ge=1)
    managed_ledger_max_entries_per_ledger: int = Field(default=50_000, ge=1)
    # Pulsar's rollover rule: a full ledger (entries or size) or one older than the maximum is
    # rolled over, but never before the minimum age.
    managed_ledger_max_size_per_ledger_mbytes: int = Field(default=2048, ge=0)
    managed_ledger_min_ledger_rollover_time_minutes: float = Field(default=10.0, ge=0)
    managed_ledger_max_ledger_rollover_time_minutes: float = Field(default=240.0, ge=0)
    # Magnetar's own: adds a topic's managed ledger keeps queued or in flight; SENDs beyond it
    # wait in order (TCP backpressure reaches the producer through the per-connection bound).
    managed_ledger_max_pending_adds: int = Field(default=10_000, ge=1)
    max_message_size: int = Field(default=5 * 1024 * 1024, gt=1024)
    keep_alive_interval_s: float = Field(default=30.0, gt=0)
    # maxPendingPublishRequestsPerConnection: SENDs of one connection in flight; beyond it the
    # broker stops reading that connection's socket until one is answered.
    max_pending_publish_requests_per_connection: int = Field(default=10_000, ge=1)
    session_timeout_s: float = Field(default=10.0, gt=0)
    # defaultNumberOfNamespaceBundles: the hash ranges a namespace's topics are spread over
    # (the unit of ownership in a cluster); every broker of a cluster must agree on it.
    default_number_of_namespace_bundles: int = Field(default=4, ge=1, le=65536)
    # Automatic bundle split (broker.conf names, Pulsar's defaults); see broker/bundle_split.py.
    load_balancer_auto_bundle_split_enabled: bool = True
    load_balancer_auto_unload_split_bundles_enabled: bool = True
    load_balancer_split_interval_minutes: float = Field(default=1.0, gt=0)
    load_balancer_namespace_bundle_max_topics: int = 1000
    load_balancer_namespace_bundle_max_sessions: int = 1000
    load_balancer_namespace_bundle_max_msg_rate: float = 30_000.0
    load_balancer_namespace_bundle_max_bandwidth_mbytes: float = 100.0
    load_balancer_namespace_maximum_bundles: int = Field(default=128, ge=1, le=65536)
    default_namespace_bundle_split_algorithm: Literal[
        "range_equally_divide", "topic_count_equally_divide"
    ] = "range_equally_divide"
    shutdown_step_timeout_s: float = Field(default=10.0, gt=0)
    # The load manager (see broker/load_manager.py and docs/cluster.md). Pulsar's report rule
    # (loadBalancerReportUpdateMaxIntervalMinutes / ...ThresholdPercentage) kept simple: a period.
    load_balancer_report_update_interval_s: float = Field(default=10.0, gt=0)
    load_balancer_shedding_enabled: bool = True
    load_balancer_shedding_interval_s: float = Field(default=60.0, gt=0)
    load_balancer_shedding_grace_period_s: float = Field(default=60.0, ge=0)
    load_balancer_broker_threshold_shedder_percentage: float = Field(default=10.0, ge=0)
    stats_update_frequency_s: float = Field(default=60.0, gt=0)  # statsUpdateFrequencyInSecs
    # Magnetar's own: CPython's youngest-generation GC threshold: a pass costs in proportion
    # to the live objects it finds, and passes stay short now that entries nobody will read
    # are not cached (docs/benchmarks.md, "Broker round 4" and "Broker round 3").
    gc_gen0_threshold: int = Field(default=100_000, ge=700)
    # Magnetar's own: sys.setswitchinterval, in ms (CPython's default is 5). Lower: the journal
    # thread gets the GIL back sooner after each write and fdatasync, which shortens the
    # publish tail (docs/benchmarks.md, "Broker round 4"). From gil_switch_busy_cpu of a core
    # on (the process's CPU over the last second), the busy interval instead: the hand-overs
    # cost more than the wait saves (broker/switch_interval.py; equal values: one interval).
    gil_switch_interval_ms: float = Field(default=0.2, gt=0, le=100)
    gil_switch_interval_busy_ms: float = Field(default=1.0, gt=0, le=100)
    gil_switch_busy_cpu: float = Field(default=0.7, gt=0, le=1024)
    log_level: str = "info"
    log_json: bool = False
    # Deduplication and backlog quotas (broker.conf names); see broker/deduplication.py and
    # broker/backlog_quota.py.
    broker_deduplication_enabled: bool = False
    broker_deduplication_entries_interval: int = Field(default=1000, ge=1)
    broker_deduplication_max_number_of_producers: int = Field(default=10_000, ge=1)
    broker_deduplication_producer_inactivity_timeout_minutes: float = Field(default=360.0, gt=0)
    backlog_quota_check_enabled: bool = True
    backlog_quota_check_interval_in_seconds: float = Field(default=60.0, gt=0)
    backlog_quota_default_limit_bytes: int = Field(default=-1, ge=-1)
    backlog_quota_default_limit_second: int = Field(default=-1, ge=-1)
    backlog_quota_default_retention_policy: Literal[
        "producer_request_hold", "producer_exception", "consumer_backlog_eviction"
    ] = "producer_request_hold"
    # Namespace-policy defaults (broker.conf names); see magnetar.broker.policy_defaults.
    message_expiry_check_interval_in_minutes: float = Field(default=5.0, gt=0)
    ttl_duration_default_in_seconds: int = Field(default=0, ge=0)
    default_retention_time_in_minutes: int = Field(default=0, ge=-1)
    default_retention_size_in_mb: int = Field(default=0, ge=-1)
    allow_auto_topic_creation: bool = True
    allow_auto_topic_creation_type: Literal["non-partitioned", "partitioned"] = "non-partitioned"
    default_num_partitions: int = Field(default=1, ge=1)
    # Delayed delivery (broker.conf names): the default of a namespace's delayedDelivery policy.
    delayed_delivery_enabled: bool = True
    delayed_delivery_tick_time_millis: int = Field(default=1000, ge=1)
    delayed_delivery_max_delay_in_millis: int = Field(default=0, ge=0)  # 0: unbounded
    # Magnetar's own: delayed messages one subscription holds in its index; past it, the
    # subscription reads no new entries until some fall due (they wait in the log).
    delayed_delivery_max_index_size: int = Field(default=1_000_000, ge=1)
    broker_service_compaction_threshold_in_bytes: int = Field(default=0, ge=0)
    broker_service_compaction_monitor_interval_in_seconds: float = Field(default=60.0, gt=0)
    schema_compatibility_strategy: Literal[
        "ALWAYS_INCOMPATIBLE",
        "ALWAYS_COMPATIBLE",
        "BACKWARD",
        "FORWARD",
        "FULL",
        "BACKWARD_TRANSITIVE",
        "FORWARD_TRANSITIVE",
        "FULL_TRANSITIVE",
    ] = "FULL"
    # Geo-replication (broker.conf names); see broker/replication/ and docs/geo-replication.md.
    # replicationProducerQueueSize: entries a replicator keeps in flight to one remote cluster.
    replication_producer_queue_size: int = Field(default=1000, ge=1)
    replication_max_in_flight_mbytes: int = Field(default=64, ge=1)  # Magnetar's own bound
    # replicationStartAt: where a new replicator cursor starts on a topic with messages.
    replication_start_at: Literal["latest", "earliest"] = "latest"
    # TLS (broker.conf's brokerServicePortTls, webServicePortTls; unset: no TLS port). The
    # certificate, trust and refresh settings come from ServerTlsSettings (docs/security.md).
    broker_service_port_tls: int | None = Field(default=None, ge=0, le=65535)
    web_service_port_tls: int | None = Field(default=None, ge=0, le=65535)
    # Magnetar's own: the process's event loop, "asyncio" or "uvloop" (magnetar.cli.event_loop;
    # what uvloop saves: docs/benchmarks.md, "Issue 17, first steps").
    event_loop: Literal["asyncio", "uvloop"] = "asyncio"
    # Security (broker.conf names; docs/security.md). Providers: token, tls, none (or Pulsar's
    # provider class names). Keys are references: file:///path, data:;base64,..., env:NAME.
    # Authentication's settings come from AuthenticationSettings (the proxy has the same).
    authorization_enabled: bool = False
    super_user_roles: CommaList = ()
    proxy_roles: CommaList = ()
    authentication_refresh_check_seconds: float = Field(default=60.0, gt=0)
    authenticate_metrics_endpoint: bool = False

    @field_validator("super_user_roles", "proxy_roles", mode="before")
    @classmethod
    def _comma_list(cls, value: object) -> object:
        return split_commas(value)

    @model_validator(mode="after")
    def _security_loads(self) -> BrokerSettings:
        """Authorization without authentication stops the start (the keys: the mixin's check)."""
        if self.authorization_enabled and not self.authentication_enabled:
            raise ValueError("authorization_enabled needs authentication_enabled")
        return self

    def security_config(self) -> SecurityConfig:
        return SecurityConfig(
            authentication_enabled=self.authentication_enabled,
            authorization_enabled=self.authorization_enabled,
            authentication=self.authentication_config(),
            super_user_roles=frozenset(self.super_user_roles),
            proxy_roles=frozenset(self.proxy_roles),
            refresh_check_s=self.authentication_refresh_check_seconds,
            authenticate_metrics_endpoint=self.authenticate_metrics_endpoint,
        )

    @field_validator("advertised_listeners")
    @classmethod
    def _listeners_parse(cls, value: str) -> str:
        parse_advertised_listeners(value)  # ValueError names the listener that is wrong
        return value

    def broker_config(self) -> BrokerConfig:
        return BrokerConfig(
            advertised_address=self.advertised_address,
            advertised_listeners=parse_advertised_listeners(self.advertised_listeners),
            broker_service_port=self.broker_port,
            web_service_port=self.web_port,
            broker_service_port_tls=self.broker_service_port_tls,
            web_service_port_tls=self.web_service_port_tls,
            cluster_name=self.cluster_name,
            max_message_size=self.max_message_size,
            keep_alive_interval_s=self.keep_alive_interval_s,
            max_pending_sends_per_connection=self.max_pending_publish_requests_per_connection,
            managed_ledger=ManagedLedgerConfig(
                ensemble_size=self.managed_ledger_default_ensemble_size,
                write_quorum=self.managed_ledger_default_write_quorum,
                ack_quorum=self.managed_ledger_default_ack_quorum,
                max_entries_per_ledger=self.managed_ledger_max_entries_per_ledger,
                max_ledger_size_bytes=self.managed_ledger_max_size_per_ledger_mbytes * 1024 * 1024,
                max_ledger_age_s=self.managed_ledger_max_ledger_rollover_time_minutes * 60,
                min_ledger_age_s=self.managed_ledger_min_ledger_rollover_time_minutes * 60,
                max_pending_adds=self.managed_ledger_max_pending_adds,
            ),
            close_timeout_s=self.shutdown_step_timeout_s,
            deduplication=self.deduplication_config(),
            backlog_quota=self.backlog_quota_config(),
            stats_window_s=self.stats_update_frequency_s,
            policy_defaults=self.policy_defaults(),
            default_number_of_namespace_bundles=self.default_number_of_namespace_bundles,
            delayed_delivery_max_index_size=self.delayed_delivery_max_index_size,
            security=self.security_config(),
            replicator=self.replicator_config(),
            replication_start_at=InitialPosition(self.replication_start_at),
        )

    def bundle_split_config(self) -> BundleSplitConfig:
        return BundleSplitConfig(
            enabled=self.load_balancer_auto_bundle_split_enabled,
            interval_s=self.load_balancer_split_interval_minutes * 60,
            max_topics=self.load_balancer_namespace_bundle_max_topics,
            max_sessions=self.load_balancer_namespace_bundle_max_sessions,
            max_msg_rate=self.load_balancer_namespace_bundle_max_msg_rate,
            max_bandwidth_mbytes=self.load_balancer_namespace_bundle_max_bandwidth_mbytes,
            maximum_bundles=self.load_balancer_namespace_maximum_bundles,
            algorithm=self.default_namespace_bundle_split_algorithm,
        )

    def load_manager_config(self) -> LoadManagerConfig:
        return LoadManagerConfig(
            report_interval_s=self.load_balancer_report_update_interval_s,
            shedding_enabled=self.load_balancer_shedding_enabled,
            shedding_interval_s=self.load_balancer_shedding_interval_s,
            shedding_grace_period_s=self.load_balancer_shedding_grace_period_s,
            threshold_percentage=self.load_balancer_broker_threshold_shedder_percentage,
        )

    def deduplication_config(self) -> DeduplicationConfig:
        return DeduplicationConfig(
            enabled=self.broker_deduplication_enabled,
            entries_interval=self.broker_deduplication_entries_interval,
            max_producers=self.broker_deduplication_max_number_of_producers,
            producer_inactivity_timeout_s=(
                self.broker_deduplication_producer_inactivity_timeout_minutes * 60
            ),
        )

    def backlog_quota_config(self) -> BacklogQuotaConfig:
        return BacklogQuotaConfig(
            check_enabled=self.backlog_quota_check_enabled,
            check_interval_s=self.backlog_quota_check_interval_in_seconds,
            default_limit_bytes=self.backlog_quota_default_limit_bytes,
            default_limit_s=self.backlog_quota_default_limit_second,
            default_policy=self.backlog_quota_default_retention_policy,
        )

    def policy_defaults(self) -> BrokerPolicyDefaults:
        return BrokerPolicyDefaults(
            message_expiry_check_interval_s=self.message_expiry_check_interval_in_minutes * 60,
            ttl_duration_default_s=self.ttl_duration_default_in_seconds,
            retention=RetentionPolicies(
                self.default_retention_time_in_minutes, self.default_retention_size_in_mb
            ),
            auto_topic_creation=AutoTopicCreationOverride(
                self.allow_auto_topic_creation, self.allow_auto_topic_creation_type
            ),
            default_num_partitions=self.default_num_partitions,
            delayed_delivery=DelayedDeliveryPolicies(
                self.delayed_delivery_enabled,
                self.delayed_delivery_tick_time_millis,
                self.delayed_delivery_max_delay_in_millis,
            ),
            compaction_threshold_bytes=self.broker_service_compaction_threshold_in_bytes,
            compaction_monitor_interval_s=self.broker_service_compaction_monitor_interval_in_seconds,
            schema_compatibility_strategy=self.schema_compatibility_strategy,
            max_ensemble_size=self.managed_ledger_max_ensemble_size,
            max_write_quorum=self.managed_ledger_max_write_quorum,
            max_ack_quorum=self.managed_ledger_max_ack_quorum,
        )

    def replicator_config(self) -> ReplicatorConfig:
        return ReplicatorConfig(
            window_entries=self.replication_producer_queue_size,
            window_bytes=self.replication_max_in_flight_mbytes * 1024 * 1024,
            close_timeout_s=self.shutdown_step_timeout_s,
        )
