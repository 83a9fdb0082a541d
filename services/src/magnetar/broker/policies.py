"""Value types of the broker's admin resources, with Pulsar's JSON field names.

``ClusterData``, ``TenantInfo``, ``Policies`` (a namespace's policies) and their parts
(``RetentionPolicies``, ``BacklogQuota``, ``AutoTopicCreationOverride``, ``AuthPolicies``) are
frozen dataclasses. ``to_json()`` gives the dict Pulsar's REST API shows (camelCase or
snake_case exactly as Pulsar spells each field); ``from_json()`` accepts that dict, ignores fields
it does not know (as Pulsar's JSON mapper does) and raises :class:`InvalidPolicies` with a reason
for a wrong type or an out-of-range value. The stored form in the metadata store is the same JSON.

Pure values; safe from any task or thread.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from magnetar.broker.resource_errors import InvalidPolicies

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


# ------------------------------------------------------------------ JSON field readers


def _obj(value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise InvalidPolicies(f"{what} must be a JSON object")
    return value


def _int(doc: Mapping[str, Any], key: str, default: int | None, *, minimum: int) -> int:
    value = doc.get(key, default)
    if value is None or isinstance(value, bool) or not isinstance(value, int):
        raise InvalidPolicies(f"{key} must be an integer")
    if value < minimum:
        raise InvalidPolicies(f"{key} must be >= {minimum}, got {value}")
    return value


def _opt_int(value: object, what: str, *, minimum: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidPolicies(f"{what} must be an integer")
    if value < minimum:
        raise InvalidPolicies(f"Invalid value for {what}: {value}")
    return value


def _opt_bool(value: object, what: str) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise InvalidPolicies(f"{what} must be true or false")
    return value


def _str_list(value: object, what: str) -> frozenset[str]:
    if value is None:
        return frozenset()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidPolicies(f"{what} must be a list of strings")
    return frozenset(value)


def _opt_str(doc: Mapping[str, Any], key: str) -> str | None:
    value = doc.get(key)
    if value is not None and not isinstance(value, str):
        raise InvalidPolicies(f"{key} must be a string")
    return value


def _choice(value: object, what: str, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str):
        raise InvalidPolicies(f"{what} must be one of {list(choices)}")
    for choice in choices:  # Pulsar's enums parse case-insensitively
        if value.lower() == choice.lower():
            return choice
    raise InvalidPolicies(f"{what} must be one of {list(choices)}, got {value!r}")


def dumps(doc: Mapping[str, Any]) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


def loads(data: bytes) -> Any:
    return json.loads(data)


# ------------------------------------------------------------------ clusters and tenants

_CLUSTER_FIELDS = {
    "service_url": "serviceUrl",
    "service_url_tls": "serviceUrlTls",
    "broker_service_url": "brokerServiceUrl",
    "broker_service_url_tls": "brokerServiceUrlTls",
    "proxy_service_url": "proxyServiceUrl",
    "proxy_protocol": "proxyProtocol",
}


@dataclass(frozen=True, slots=True)
class ClusterData:
    service_url: str | None = None
    service_url_tls: str | None = None
    broker_service_url: str | None = None
    broker_service_url_tls: str | None = None
    proxy_service_url: str | None = None
    proxy_protocol: str | None = None
    peer_cluster_names: frozenset[str] = frozenset()

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            key: getattr(self, attr)
            for attr, key in _CLUSTER_FIELDS.items()
            if getattr(self, attr) is not None
        }
        if self.peer_cluster_names:
            doc["peerClusterNames"] = sorted(self.peer_cluster_names)
        return doc

    @classmethod
    def from_json(cls, value: object) -> ClusterData:
        doc = _obj(value, "ClusterData")
        fields = {attr: _opt_str(doc, key) for attr, key in _CLUSTER_FIELDS.items()}
        peers = _str_list(doc.get("peerClusterNames"), "peerClusterNames")
        return cls(**fields, peer_cluster_names=peers)


@dataclass(frozen=True, slots=True)
class TenantInfo:
    admin_roles: frozenset[str] = frozenset()
    allowed_clusters: frozenset[str] = frozenset()

    def to_json(self) -> dict[str, Any]:
        return {
            "adminRoles": sorted(self.admin_roles),
            "allowedClusters": sorted(self.allowed_clusters),
        }

    @classmethod
    def from_json(cls, value: object) -> TenantInfo:
        doc = _obj(value, "TenantInfo")
        return cls(
            admin_roles=_str_list(doc.get("adminRoles"), "adminRoles"),
            allowed_clusters=_str_list(doc.get("allowedClusters"), "allowedClusters"),
        )


# ------------------------------------------------------------------ namespace policies


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
        doc = _obj(value, "RetentionPolicies")
        return cls(
            _int(doc, "retentionTimeInMinutes", 0, minimum=-1),
            _int(doc, "retentionSizeInMB", 0, minimum=-1),
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
        doc = _obj(value, "BacklogQuota")
        size_key = "limitSize" if "limitSize" in doc or "limit" not in doc else "limit"
        return cls(
            limit_size=_int(doc, size_key, -1, minimum=-1),
            limit_time=_int(doc, "limitTime", -1, minimum=-1),
            policy=_choice(
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
        doc = _obj(value, "AutoTopicCreationOverride")
        allow = _opt_bool(doc.get("allowAutoTopicCreation"), "allowAutoTopicCreation")
        if allow is None:
            raise InvalidPolicies("allowAutoTopicCreation is required")
        topic_type = _choice(doc.get("topicType", "non-partitioned"), "topicType", TOPIC_TYPES)
        partitions = _opt_int(doc.get("defaultNumPartitions"), "defaultNumPartitions", minimum=1)
        if allow and topic_type == "partitioned" and partitions is None:
            raise InvalidPolicies("defaultNumPartitions is required for partitioned topics")
        if topic_type == "non-partitioned" and partitions is not None:
            raise InvalidPolicies("defaultNumPartitions is only for partitioned topics")
        return cls(allow, topic_type, partitions)


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
        doc = _obj(value, "auth_policies")
        grants = _obj(doc.get("namespace_auth", {}), "namespace_auth")
        return cls({role: parse_actions(actions) for role, actions in grants.items()})


def parse_actions(value: object) -> frozenset[str]:
    """A JSON list of Pulsar AuthActions (``produce``, ``consume``, ...)."""
    if not isinstance(value, list):
        raise InvalidPolicies(f"actions must be a list of {list(AUTH_ACTIONS)}")
    return frozenset(_choice(v, "action", AUTH_ACTIONS) for v in value)


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
    deleted: bool = False

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
            "deleted": self.deleted,
        }

    @classmethod
    def from_json(cls, value: object) -> Policies:
        doc = _obj(value, "Policies")
        quotas = _obj(doc.get("backlog_quota_map") or {}, "backlog_quota_map")
        retention = doc.get("retention_policies")
        auto = doc.get("autoTopicCreationOverride")
        return cls(
            auth_policies=AuthPolicies.from_json(doc.get("auth_policies") or {}),
            replication_clusters=_str_list(doc.get("replication_clusters"), "replication_clusters"),
            backlog_quota_map={
                _choice(k, "backlogQuotaType", BACKLOG_QUOTA_TYPES): BacklogQuota.from_json(q)
                for k, q in quotas.items()
            },
            message_ttl_in_seconds=_opt_int(
                doc.get("message_ttl_in_seconds"), "message TTL", minimum=0
            ),
            retention_policies=None
            if retention is None
            else RetentionPolicies.from_json(retention),
            deduplication_enabled=_opt_bool(
                doc.get("deduplicationEnabled"), "deduplicationEnabled"
            ),
            auto_topic_creation_override=(
                None if auto is None else AutoTopicCreationOverride.from_json(auto)
            ),
            schema_compatibility_strategy=_choice(
                doc.get("schema_compatibility_strategy", "UNDEFINED"),
                "schema_compatibility_strategy",
                SCHEMA_COMPATIBILITY_STRATEGIES,
            ),
            deleted=bool(_opt_bool(doc.get("deleted"), "deleted")),
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
