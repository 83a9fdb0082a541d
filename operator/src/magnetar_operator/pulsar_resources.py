"""Tenant, Namespace and Topic specs as the Pulsar values they stand for (pure).

Each ``*Desired`` holds only what the spec names: a setting left out of the spec is not managed
(whatever Pulsar has is kept), so the operator never fights another tool over a field the user
did not claim. A setting the previous spec named and the new one does not is in
``NamespaceDesired.removed``: the operator removes it from Pulsar (the broker's default applies
again), so deleting a line of the spec undoes what it did. Parsing raises
:class:`~magnetar_operator.spec.InvalidSpec` naming the field; names are checked with
:mod:`magnetar.naming`, the same rules the broker applies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from magnetar.naming import NON_PERSISTENT, PERSISTENT, NamespaceName, TopicName
from magnetar.policies import (
    AutoTopicCreationOverride,
    BacklogQuota,
    InvalidPolicies,
    PersistencePolicies,
    RetentionPolicies,
    TenantInfo,
)
from magnetar_operator.spec import InvalidSpec


def _name(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> str:
    return str(spec.get("name") or meta["name"])


def deletion_policy(spec: Mapping[str, Any]) -> str:
    return str(spec.get("deletionPolicy") or "Retain")


@dataclass(frozen=True)
class TenantDesired:
    name: str
    admin_roles: frozenset[str]
    allowed_clusters: frozenset[str] | None  # None: the referenced cluster

    @classmethod
    def parse(cls, meta: Mapping[str, Any], spec: Mapping[str, Any]) -> TenantDesired:
        name = _name(meta, spec)
        if "/" in name or not name:
            raise InvalidSpec(f"spec.name: {name!r} is not a tenant name")
        allowed = spec.get("allowedClusters")
        return cls(
            name,
            frozenset(str(r) for r in spec.get("adminRoles") or ()),
            None if allowed is None else frozenset(str(c) for c in allowed),
        )

    def info(self, cluster_name: str) -> TenantInfo:
        allowed = self.allowed_clusters if self.allowed_clusters is not None else {cluster_name}
        return TenantInfo(admin_roles=self.admin_roles, allowed_clusters=frozenset(allowed))


# The Namespace spec's policy fields, in the order they are applied (and removed).
NAMESPACE_POLICIES = (
    "retention",
    "messageTTLSeconds",
    "backlogQuota",
    "deduplication",
    "autoTopicCreation",
    "persistence",
    "replicationClusters",
)


def _persistence(value: Any) -> PersistencePolicies | None:
    if value is None:
        return None
    try:
        return PersistencePolicies(
            value.get("ensembleSize"), value.get("writeQuorum"), value.get("ackQuorum")
        )
    except InvalidPolicies as exc:
        raise InvalidSpec(f"spec.persistence: {exc.reason}") from exc


def _replication_clusters(value: Any) -> frozenset[str] | None:
    if value is None:
        return None
    clusters = frozenset(str(c) for c in value)
    if not clusters:
        raise InvalidSpec(
            "spec.replicationClusters: name at least one cluster (only this one: no replication)"
        )
    return clusters


@dataclass(frozen=True)
class NamespaceDesired:
    name: str  # tenant/namespace
    bundles: int | None
    retention: RetentionPolicies | None
    message_ttl_s: int | None
    backlog_quota: BacklogQuota | None
    deduplication: bool | None
    auto_topic_creation: AutoTopicCreationOverride | None
    persistence: PersistencePolicies | None = None
    replication_clusters: frozenset[str] | None = None
    removed: tuple[str, ...] = ()  # NAMESPACE_POLICIES the previous spec named, this one not

    @classmethod
    def parse(
        cls,
        meta: Mapping[str, Any],
        spec: Mapping[str, Any],
        previous: Mapping[str, Any] | None = None,
    ) -> NamespaceDesired:
        """``spec`` as Pulsar values; ``previous`` (the spec before an update) gives
        :attr:`removed`."""
        tenant = str(spec.get("tenant") or "")
        try:
            name = str(NamespaceName.parse(f"{tenant}/{_name(meta, spec)}"))
        except ValueError as exc:
            raise InvalidSpec(f"spec.tenant/spec.name: {exc}") from exc
        retention = spec.get("retention")
        quota = spec.get("backlogQuota")
        auto = spec.get("autoTopicCreation")
        return cls(
            name=name,
            bundles=spec.get("bundles"),
            retention=None
            if retention is None
            else RetentionPolicies(int(retention["timeInMinutes"]), int(retention["sizeInMB"])),
            message_ttl_s=spec.get("messageTTLSeconds"),
            backlog_quota=None
            if quota is None
            else BacklogQuota(
                int(quota.get("limitSize", -1)),
                int(quota.get("limitTime", -1)),
                str(quota.get("policy", "producer_request_hold")),
            ),
            deduplication=spec.get("deduplication"),
            auto_topic_creation=None
            if auto is None
            else AutoTopicCreationOverride(
                bool(auto["allow"]),
                str(auto.get("type", "non-partitioned")),
                auto.get("defaultNumPartitions"),
            ),
            persistence=_persistence(spec.get("persistence")),
            replication_clusters=_replication_clusters(spec.get("replicationClusters")),
            removed=tuple(
                k
                for k in NAMESPACE_POLICIES
                if (previous or {}).get(k) is not None and spec.get(k) is None
            ),
        )


@dataclass(frozen=True)
class TopicDesired:
    name: str  # domain://tenant/namespace/local
    namespace: str
    partitions: int

    @classmethod
    def parse(cls, meta: Mapping[str, Any], spec: Mapping[str, Any]) -> TopicDesired:
        domain = PERSISTENT if spec.get("persistent", True) else NON_PERSISTENT
        namespace = str(spec.get("namespace") or "")
        try:
            topic = TopicName.parse(f"{domain}://{namespace}/{_name(meta, spec)}")
        except ValueError as exc:
            raise InvalidSpec(f"spec.namespace/spec.name: {exc}") from exc
        partitions = spec.get("partitions", 0)
        if not isinstance(partitions, int) or partitions < 0:
            raise InvalidSpec(f"spec.partitions must be an integer >= 0, got {partitions!r}")
        return cls(str(topic), str(topic.namespace), partitions)
