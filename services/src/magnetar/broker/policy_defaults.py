"""The broker-level defaults of namespace policies (Pulsar's broker.conf), and the effective value
of a policy for a namespace: the namespace's own setting when it has one, else the broker's.

* message TTL: ``ttlDurationDefaultInSeconds`` (0: messages never expire), checked every
  ``messageExpiryCheckIntervalInMinutes``;
* retention: ``defaultRetentionTimeInMinutes`` / ``defaultRetentionSizeInMB`` (-1: infinite;
  0/0: a fully consumed ledger is deleted as soon as it is rolled over);
* auto topic creation: ``allowAutoTopicCreation``, ``allowAutoTopicCreationType``,
  ``defaultNumPartitions``;
* delayed delivery: ``delayedDeliveryEnabled``, ``delayedDeliveryTickTimeMillis``,
  ``delayedDeliveryMaxDelayInMillis`` (0: unbounded);
* compaction threshold: ``brokerServiceCompactionThresholdInBytes`` (0: no automatic
  compaction), checked every ``brokerServiceCompactionMonitorIntervalInSeconds``;
* schema compatibility: ``schemaCompatibilityStrategy`` (FULL), for namespaces whose own
  strategy is UNDEFINED (:mod:`magnetar.broker.schemas`);
* persistence: the bounds ``managedLedgerMaxEnsembleSize`` / ``...MaxWriteQuorum`` /
  ``...MaxAckQuorum`` (the defaults are the managed ledger's; :mod:`magnetar.broker.persistence`).

Retention reaches the managed ledger as its ``ManagedLedgerConfig`` retention (minutes ->
seconds, MB -> bytes, negative stays "infinite").

Pure values and functions; safe from any task.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from magnetar.managed_ledger import ManagedLedgerConfig
from magnetar.policies import (
    AutoTopicCreationOverride,
    DelayedDeliveryPolicies,
    Policies,
    RetentionPolicies,
)

MB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class BrokerPolicyDefaults:
    message_expiry_check_interval_s: float = 300.0
    ttl_duration_default_s: int = 0
    retention: RetentionPolicies = field(default_factory=RetentionPolicies)
    auto_topic_creation: AutoTopicCreationOverride = field(
        default_factory=AutoTopicCreationOverride
    )
    default_num_partitions: int = 1
    delayed_delivery: DelayedDeliveryPolicies = field(default_factory=DelayedDeliveryPolicies)
    compaction_threshold_bytes: int = 0
    compaction_monitor_interval_s: float = 60.0
    schema_compatibility_strategy: str = "FULL"  # a namespace's UNDEFINED means this
    # managedLedgerMaxEnsembleSize / ...MaxWriteQuorum / ...MaxAckQuorum: the largest
    # persistence policy a namespace may set (magnetar.broker.persistence)
    max_ensemble_size: int = 5
    max_write_quorum: int = 5
    max_ack_quorum: int = 5


def effective_ttl_s(policies: Policies, defaults: BrokerPolicyDefaults) -> int:
    """Seconds after publication a message expires; 0 means never."""
    if policies.message_ttl_in_seconds is not None:
        return policies.message_ttl_in_seconds
    return defaults.ttl_duration_default_s


def effective_compaction_threshold(policies: Policies, defaults: BrokerPolicyDefaults) -> int:
    """Bytes after the compaction horizon that start a compaction; 0 means never."""
    if policies.compaction_threshold is not None:
        return policies.compaction_threshold
    return defaults.compaction_threshold_bytes


def effective_retention(policies: Policies, defaults: BrokerPolicyDefaults) -> RetentionPolicies:
    return policies.retention_policies or defaults.retention


def effective_auto_topic_creation(
    policies: Policies, defaults: BrokerPolicyDefaults
) -> AutoTopicCreationOverride:
    """The namespace override, else the broker's setting (partitioned: defaultNumPartitions)."""
    if policies.auto_topic_creation_override is not None:
        return policies.auto_topic_creation_override
    auto = defaults.auto_topic_creation
    if auto.topic_type == "partitioned" and auto.default_num_partitions is None:
        return replace(auto, default_num_partitions=defaults.default_num_partitions)
    return auto


def effective_delayed_delivery(
    policies: Policies | None, defaults: BrokerPolicyDefaults
) -> DelayedDeliveryPolicies:
    """The namespace's delayedDelivery policy, else the broker's."""
    if policies is not None and policies.delayed_delivery_policies is not None:
        return policies.delayed_delivery_policies
    return defaults.delayed_delivery


def with_retention(
    config: ManagedLedgerConfig, retention: RetentionPolicies
) -> ManagedLedgerConfig:
    """``config`` with the managed-ledger form of ``retention``."""
    minutes, mb = retention.retention_time_in_minutes, retention.retention_size_in_mb
    return replace(
        config,
        retention_time_s=-1.0 if minutes < 0 else minutes * 60.0,
        retention_size_bytes=-1 if mb < 0 else mb * MB,
    )
