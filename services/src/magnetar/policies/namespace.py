"""A namespace's ``Policies`` and their parts, with Pulsar's admin v2 JSON field names.

``Policies`` is what ``GET /admin/v2/namespaces/{tenant}/{namespace}`` returns;
``RetentionPolicies``, ``BacklogQuota``, ``AutoTopicCreationOverride``, ``AuthPolicies``,
``DelayedDeliveryPolicies`` and ``PersistencePolicies`` (:mod:`.persistence`) are its parts
and the bodies of the per-policy routes. Each field keeps Pulsar's spelling
(``retention_policies`` / ``retentionTimeInMinutes``, ``backlog_quota_map`` / ``limitSize``,
``deduplicationEnabled``). ``to_json()`` gives that dict; ``from_json()`` accepts it, ignores
fields it does not know (as Pulsar's JSON mapper does) and raises
:class:`~magnetar.policies.errors.InvalidPolicies` for a wrong type or an out-of-range value.

In ``Policies``, ``None`` means "not set here": what applies then (the broker's defaults) is
the broker's business, not this module's. Used by the broker, the admin API and the admin
client. Pure values; safe from any task.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from magnetar.policies.errors import InvalidPolicies
from magnetar.policies.fields import choice, integer, obj, opt_bool, opt_int, str_set
from magnetar.policies.persistence import PersistencePolicies

BACKLOG_QUOTA_POLICIES = (
    "producer_request_hold",
    "producer_exception",
    "consumer_backlog_eviction",
)
BACKLOG_QUOTA_TYPES = ("destination_storage", "message_age")
TOPIC_TYPES = ("partitioned", "non-partitioned")
AUTH_ACTIONS = ("produce", "consume", "functions", "sources", "sinks", "packages")
SCHEMA_COMPATIBILITY_STRATEGIES = (
    "UNDEFINED",
    "ALWAYS_INCOMPATIBLE",
    "ALWAYS_COMPATIBLE",
    "BACKWARD",
    "FORWARD",
    "FULL",
    "BACKWARD_TRANSITIVE",
    "FORWARD_TRANSITIVE",
    "FULL_TRANSITIVE",
)


@dataclass(frozen=True, slots=True)
class RetentionPolicies:
    """-1 means unlimited; 0/0 keeps nothing beyond what subscriptions still need."""

    retention_time_in_minutes: int = 0
    retention_size_in_mb: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "retentionTimeInMinutes": self.retention_time_in_minutes,
            "retentionSizeInMB": self.retention_size_in_mb,
        }

    @classmethod
    def from_json(cls, value: object) -> RetentionPolicies:
        doc = obj(value, "RetentionPolicies")
        return cls(
            integer(doc, "retentionTimeInMinutes", 0, minimum=-1),
            integer(doc, "retentionSizeInMB", 0, minimum=-1),
        )


@dataclass(frozen=True, slots=True)
class BacklogQuota:
    """``limit_size`` in bytes and ``limit_time`` in seconds; -1 means no limit."""

    limit_size: int = -1
    limit_time: int = -1
    policy: str = "producer_request_hold"

    def to_json(self) -> dict[str, Any]:
        return {"limitSize": self.limit_size, "limitTime": self.limit_time, "policy": self.policy}

    @classmethod
    def from_json(cls, value: object) -> BacklogQuota:
        doc = obj(value, "BacklogQuota")
        size_key = "limitSize" if "limitSize" in doc or "limit" not in doc else "limit"
        return cls(
            limit_size=integer(doc, size_key, -1, minimum=-1),
            limit_time=integer(doc, "limitTime", -1, minimum=-1),
            policy=choice(
                doc.get("policy", "producer_request_hold"), "policy", BACKLOG_QUOTA_POLICIES
            ),
        )


@dataclass(frozen=True, slots=True)
class AutoTopicCreationOverride:
    allow_auto_topic_creation: bool = True
    topic_type: str = "non-partitioned"
    default_num_partitions: int | None = None

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "allowAutoTopicCreation": self.allow_auto_topic_creation,
            "topicType": self.topic_type,
        }
        if self.default_num_partitions is not None:
            doc["defaultNumPartitions"] = self.default_num_partitions
        return doc

    @classmethod
    def from_json(cls, value: object) -> AutoTopicCreationOverride:
        doc = obj(value, "AutoTopicCreationOverride")
        allow = opt_bool(doc.get("allowAutoTopicCreation"), "allowAutoTopicCreation")
        if allow is None:
            raise InvalidPolicies("allowAutoTopicCreation is required")
        topic_type = choice(doc.get("topicType", "non-partitioned"), "topicType", TOPIC_TYPES)
        partitions = opt_int(doc.get("defaultNumPartitions"), "defaultNumPartitions", minimum=1)
        if allow and topic_type == "partitioned" and partitions is None:
            raise InvalidPolicies("defaultNumPartitions is required for partitioned topics")
        if topic_type == "non-partitioned" and partitions is not None:
            raise InvalidPolicies("defaultNumPartitions is only for partitioned topics")
        return cls(allow, topic_type, partitions)


@dataclass(frozen=True, slots=True)
class DelayedDeliveryPolicies:
    """Delayed delivery (``deliver_at_time``) on a namespace: whether messages wait for their
    time, the tick of the broker's index in ms, and the longest delay a producer may ask for
    in ms (0: unbounded)."""

    active: bool = True
    tick_time: int = 1000
    max_delivery_delay_in_millis: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "active": self.active,
            "tickTime": self.tick_time,
            "maxDeliveryDelayInMillis": self.max_delivery_delay_in_millis,
        }

    @classmethod
    def from_json(cls, value: object) -> DelayedDeliveryPolicies:
        doc = obj(value, "DelayedDeliveryPolicies")
        active = opt_bool(doc.get("active"), "active")
        if active is None:
            raise InvalidPolicies("active is required (true or false)")
        return cls(
            active,
            integer(doc, "tickTime", 1000, minimum=1),
            integer(doc, "maxDeliveryDelayInMillis", 0, minimum=0),
        )


@dataclass(frozen=True, slots=True)
class AuthPolicies:
    """Namespace-level grants: role -> actions."""

    namespace_auth: Mapping[str, frozenset[str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "namespace_auth": {r: sorted(a) for r, a in sorted(self.namespace_auth.items())},
            "destination_auth": {},
            "subscription_auth_roles": {},
        }

    @classmethod
    def from_json(cls, value: object) -> AuthPolicies:
        doc = obj(value, "auth_policies")
        grants = obj(doc.get("namespace_auth", {}), "namespace_auth")
        return cls({role: parse_actions(actions) for role, actions in grants.items()})


def parse_actions(value: object) -> frozenset[str]:
    """A JSON list of Pulsar AuthActions (``produce``, ``consume``, ...)."""
    if not isinstance(value, list):
        raise InvalidPolicies(f"actions must be a list of {list(AUTH_ACTIONS)}")
    return frozenset(choice(v, "action", AUTH_ACTIONS) for v in value)


@dataclass(frozen=True, slots=True)
class Policies:
    """One namespace's policies. ``None`` means "not set here: the broker default applies"."""

    auth_policies: AuthPolicies = field(default_factory=AuthPolicies)
    replication_clusters: frozenset[str] = frozenset()
    backlog_quota_map: Mapping[str, BacklogQuota] = field(default_factory=dict)
    message_ttl_in_seconds: int | None = None
    retention_policies: RetentionPolicies | None = None
    deduplication_enabled: bool | None = None
    auto_topic_creation_override: AutoTopicCreationOverride | None = None
    schema_compatibility_strategy: str = "UNDEFINED"
    delayed_delivery_policies: DelayedDeliveryPolicies | None = None
    compaction_threshold: int | None = None
    deleted: bool = False
    persistence: PersistencePolicies | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "auth_policies": self.auth_policies.to_json(),
            "replication_clusters": sorted(self.replication_clusters),
            "backlog_quota_map": {
                k: q.to_json() for k, q in sorted(self.backlog_quota_map.items())
            },
            "message_ttl_in_seconds": self.message_ttl_in_seconds,
            "retention_policies": (
                None if self.retention_policies is None else self.retention_policies.to_json()
            ),
            "deduplicationEnabled": self.deduplication_enabled,
            "autoTopicCreationOverride": (
                None
                if self.auto_topic_creation_override is None
                else self.auto_topic_creation_override.to_json()
            ),
            "schema_compatibility_strategy": self.schema_compatibility_strategy,
            "delayed_delivery_policies": (
                None
                if self.delayed_delivery_policies is None
                else self.delayed_delivery_policies.to_json()
            ),
            "compaction_threshold": self.compaction_threshold,
            "deleted": self.deleted,
            "persistence": None if self.persistence is None else self.persistence.to_json(),
        }

    @classmethod
    def from_json(cls, value: object) -> Policies:
        doc = obj(value, "Policies")
        quotas = obj(doc.get("backlog_quota_map") or {}, "backlog_quota_map")
        retention = doc.get("retention_policies")
        auto = doc.get("autoTopicCreationOverride")
        delayed = doc.get("delayed_delivery_policies")
        persistence = doc.get("persistence")
        return cls(
            auth_policies=AuthPolicies.from_json(doc.get("auth_policies") or {}),
            replication_clusters=str_set(doc.get("replication_clusters"), "replication_clusters"),
            backlog_quota_map={
                choice(k, "backlogQuotaType", BACKLOG_QUOTA_TYPES): BacklogQuota.from_json(q)
                for k, q in quotas.items()
            },
            message_ttl_in_seconds=opt_int(
                doc.get("message_ttl_in_seconds"), "message TTL", minimum=0
            ),
            retention_policies=None
            if retention is None
            else RetentionPolicies.from_json(retention),
            deduplication_enabled=opt_bool(doc.get("deduplicationEnabled"), "deduplicationEnabled"),
            auto_topic_creation_override=(
                None if auto is None else AutoTopicCreationOverride.from_json(auto)
            ),
            schema_compatibility_strategy=choice(
                doc.get("schema_compatibility_strategy", "UNDEFINED"),
                "schema_compatibility_strategy",
                SCHEMA_COMPATIBILITY_STRATEGIES,
            ),
            delayed_delivery_policies=(
                None if delayed is None else DelayedDeliveryPolicies.from_json(delayed)
            ),
            compaction_threshold=opt_int(
                doc.get("compaction_threshold"), "compaction threshold", minimum=0
            ),
            deleted=bool(opt_bool(doc.get("deleted"), "deleted")),
            persistence=None if persistence is None else PersistencePolicies.from_json(persistence),
        )

    # Small pure updates used with BrokerResources.set_policies(ns, fn).

    def with_grant(self, role: str, actions: frozenset[str]) -> Policies:
        grants = dict(self.auth_policies.namespace_auth)
        grants[role] = actions
        return replace(self, auth_policies=AuthPolicies(grants))

    def without_grant(self, role: str) -> Policies:
        grants = {r: a for r, a in self.auth_policies.namespace_auth.items() if r != role}
        return replace(self, auth_policies=AuthPolicies(grants))

    def with_backlog_quota(self, quota_type: str, quota: BacklogQuota | None) -> Policies:
        quotas = {k: q for k, q in self.backlog_quota_map.items() if k != quota_type}
        if quota is not None:
            quotas[quota_type] = quota
        return replace(self, backlog_quota_map=quotas)
