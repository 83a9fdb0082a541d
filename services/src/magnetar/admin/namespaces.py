"""``/admin/v2/namespaces``: create/list/delete and the namespace policies Pulsar exposes
(retention, persistence, messageTTL, backlogQuota, deduplication, delayedDelivery,
compactionThreshold, autoTopicCreation, schemaCompatibilityStrategy, replication, permissions).
``GET /admin/v2/namespaces/{tenant}/{namespace}`` returns the whole Policies object; a create
body's ``bundles`` (Pulsar's ``{"numBundles": N}``) sets the namespace's bundles, stored by the
bundle factory (and forgotten on delete). A policy that is not set reads as 204 No Content
(Pulsar answers a null value so). Every change is a compare-and-set through ``set_policies``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Annotated, Any, Protocol

from fastapi import APIRouter, Body, Response

from magnetar.admin.service import TopicService
from magnetar.broker.bundles import NamespaceBundles
from magnetar.broker.errors import NamespaceNotEmpty, ReplicationClusterRefused, TenantNotFound
from magnetar.broker.resources import BrokerResources
from magnetar.naming import NamespaceName, TopicName
from magnetar.policies import (
    BACKLOG_QUOTA_TYPES,
    SCHEMA_COMPATIBILITY_STRATEGIES,
    AutoTopicCreationOverride,
    BacklogQuota,
    DelayedDeliveryPolicies,
    InvalidPolicies,
    PersistencePolicies,
    Policies,
    RetentionPolicies,
    parse_actions,
)

JsonObject = Annotated[dict[str, Any], Body()]


class JsonDocument(Protocol):
    """A policy document: Pulsar's JSON shape out (``from_json`` reads it in)."""

    def to_json(self) -> dict[str, Any]: ...


NO_CONTENT = 204


def _none() -> Response:
    return Response(status_code=NO_CONTENT)


def _quota_type(value: str) -> str:
    if value not in BACKLOG_QUOTA_TYPES:
        raise InvalidPolicies(f"backlogQuotaType must be one of {list(BACKLOG_QUOTA_TYPES)}")
    return value


def _check_retention_covers_quota(policies: Policies) -> Policies:
    """Pulsar: a size-limited retention must be at least the destination_storage quota."""
    retention = policies.retention_policies
    quota = policies.backlog_quota_map.get("destination_storage")
    if retention is None or quota is None or quota.limit_size < 0:
        return policies
    if 0 <= retention.retention_size_in_mb * 1024 * 1024 < quota.limit_size:
        raise InvalidPolicies("Retention Quota must exceed configured backlog quota for namespace.")
    return policies


def initial_bundles(ns: NamespaceName, value: object, default_count: int) -> NamespaceBundles:
    """A new namespace's bundles from a create body's ``bundles`` (Pulsar's
    ``{"numBundles": N}``, or explicit ``boundaries``); 412 when malformed."""
    try:
        return NamespaceBundles.from_json(ns, value, default_count)
    except ValueError as exc:
        raise InvalidPolicies(f"Invalid bundles: {exc}") from exc


def replication_clusters(
    requested: list[str], tenant: str, known: set[str], allowed: frozenset[str]
) -> frozenset[str]:
    """Pulsar's checks on a namespace's replication clusters: a non-empty list without
    ``global`` (412), every cluster registered and allowed for the tenant (403)."""
    if not requested:
        raise InvalidPolicies("ClusterIds should not be null or empty")
    if "global" in requested:
        raise InvalidPolicies("Cannot specify global in the list of replication clusters")
    for cluster in requested:
        if cluster not in known:
            raise ReplicationClusterRefused(f"Invalid cluster id: {cluster}")
        if cluster not in allowed:
            raise ReplicationClusterRefused(
                f"Cluster {cluster} is not in the list of allowed clusters list for tenant "
                f"[{tenant}]"
            )
    return frozenset(requested)


async def parse_namespace(resources: BrokerResources, tenant: str, namespace: str) -> NamespaceName:
    """Validate the name; 404 when its tenant does not exist."""
    ns = NamespaceName.parse(f"{tenant}/{namespace}")
    if not await resources.tenant_exists(ns.tenant):
        raise TenantNotFound(ns.tenant)
    return ns


async def delete_namespace(service: TopicService, ns: NamespaceName, force: bool) -> None:
    """Delete ``ns``; with topics in it: 409 unless ``force`` (then delete them first)."""
    resources = service.resources
    await resources.get_policies(ns)  # 404 before anything else
    partitioned = await resources.list_partitioned_topics(ns)
    topics = [
        *await service.list_topics(ns, True),
        *await service.list_topics(ns, False),
    ]
    if (topics or partitioned) and not force:
        raise NamespaceNotEmpty(str(ns))
    for name in topics:
        await service.delete_topic(TopicName.parse(name), True)
    await resources.delete_namespace(ns)
    await service.ownership.bundle_factory.delete(ns)


def router(service: TopicService) -> APIRouter:
    resources = service.resources
    api = APIRouter(prefix="/admin/v2/namespaces", tags=["namespaces"])

    async def ns_of(tenant: str, namespace: str) -> NamespaceName:
        return await parse_namespace(resources, tenant, namespace)

    @api.get("/{tenant}", summary="List the namespaces of a tenant")
    async def list_namespaces(tenant: str) -> list[str]:
        return [str(ns) for ns in await resources.list_namespaces(tenant)]

    @api.get("/{tenant}/{namespace}", summary="Get a namespace's policies")
    @api.get("/{tenant}/{namespace}/", include_in_schema=False)
    async def get_policies(tenant: str, namespace: str) -> dict[str, Any]:
        return (await get(tenant, namespace)).to_json()

    @api.put("/{tenant}/{namespace}", status_code=NO_CONTENT, summary="Create a namespace")
    async def create_namespace(
        tenant: str, namespace: str, body: Annotated[dict[str, Any] | None, Body()] = None
    ) -> None:
        ns = await ns_of(tenant, namespace)
        policies = _check_retention_covers_quota(Policies.from_json(body or {}))
        factory = service.ownership.bundle_factory
        bundles = (body or {}).get("bundles")
        initial = None if bundles is None else initial_bundles(ns, bundles, factory.default_count)
        await resources.create_namespace(ns, policies)
        if initial is not None:
            await factory.create(initial)

    @api.delete("/{tenant}/{namespace}", status_code=NO_CONTENT, summary="Delete a namespace")
    async def delete(tenant: str, namespace: str, force: bool = False) -> None:
        await delete_namespace(service, await ns_of(tenant, namespace), force)

    async def get(tenant: str, namespace: str) -> Policies:
        return await resources.get_policies(await ns_of(tenant, namespace))

    async def change(tenant: str, namespace: str, fn: Any) -> None:
        ns = await ns_of(tenant, namespace)
        stored = await resources.set_policies(ns, lambda p: _check_retention_covers_quota(fn(p)))
        await service.policies_changed(ns, stored)

    def document_policy(
        path: str, label: str, field: str, parse: Callable[[object], JsonDocument]
    ) -> None:
        """GET (204 when unset), POST (a JSON object, parsed: 412 names a bad field) and
        DELETE of one policy document: retention, persistence, delayed delivery, auto topic
        creation."""

        async def get_policy(tenant: str, namespace: str) -> Any:
            value = getattr(await get(tenant, namespace), field)
            return _none() if value is None else value.to_json()

        async def set_policy(tenant: str, namespace: str, body: JsonObject) -> None:
            value = parse(body)
            await change(tenant, namespace, lambda p: replace(p, **{field: value}))

        async def remove_policy(tenant: str, namespace: str) -> None:
            await change(tenant, namespace, lambda p: replace(p, **{field: None}))

        route = f"/{{tenant}}/{{namespace}}/{path}"
        name = field.removesuffix("_policies").removesuffix("_override")
        api.add_api_route(route, get_policy, methods=["GET"], summary=f"Get {label}",
                          name=f"get_{name}")  # fmt: skip
        api.add_api_route(route, set_policy, methods=["POST"], status_code=NO_CONTENT,
                          summary=f"Set {label}", name=f"set_{name}")  # fmt: skip
        api.add_api_route(route, remove_policy, methods=["DELETE"], status_code=NO_CONTENT,
                          summary=f"Remove {label}", name=f"remove_{name}")  # fmt: skip

    # ---- retention
    document_policy("retention", "retention", "retention_policies", RetentionPolicies.from_json)

    # ---- persistence (ensemble, write and ack quorums of new ledgers)
    document_policy(
        "persistence",
        "persistence",
        "persistence",
        lambda body: service.check_persistence(PersistencePolicies.from_json(body)),
    )

    # ---- message TTL
    @api.get("/{tenant}/{namespace}/messageTTL", summary="Get message TTL (seconds)")
    async def get_ttl(tenant: str, namespace: str) -> Any:
        value = (await get(tenant, namespace)).message_ttl_in_seconds
        return _none() if value is None else value

    @api.post("/{tenant}/{namespace}/messageTTL", status_code=NO_CONTENT, summary="Set message TTL")
    async def set_ttl(tenant: str, namespace: str, body: Annotated[int, Body()]) -> None:
        if body < 0:
            raise InvalidPolicies("Invalid value for message TTL")
        await change(tenant, namespace, lambda p: replace(p, message_ttl_in_seconds=body))

    @api.delete("/{tenant}/{namespace}/messageTTL", status_code=NO_CONTENT)
    async def remove_ttl(tenant: str, namespace: str) -> None:
        await change(tenant, namespace, lambda p: replace(p, message_ttl_in_seconds=None))

    # ---- compaction threshold
    @api.get("/{tenant}/{namespace}/compactionThreshold", summary="Get compaction threshold")
    async def get_compaction_threshold(tenant: str, namespace: str) -> Any:
        value = (await get(tenant, namespace)).compaction_threshold
        return _none() if value is None else value

    @api.put("/{tenant}/{namespace}/compactionThreshold", status_code=NO_CONTENT)
    async def set_compaction_threshold(
        tenant: str, namespace: str, body: Annotated[int, Body(examples=[104857600])]
    ) -> None:
        """Bytes of backlog after the compaction horizon that start a compaction (0: never)."""
        if body < 0:
            raise InvalidPolicies("compactionThreshold must be 0 or greater")
        await change(tenant, namespace, lambda p: replace(p, compaction_threshold=body))

    @api.delete("/{tenant}/{namespace}/compactionThreshold", status_code=NO_CONTENT)
    async def remove_compaction_threshold(tenant: str, namespace: str) -> None:
        await change(tenant, namespace, lambda p: replace(p, compaction_threshold=None))

    # ---- backlog quotas
    @api.get("/{tenant}/{namespace}/backlogQuotaMap", summary="Get backlog quotas by type")
    async def get_quotas(tenant: str, namespace: str) -> dict[str, Any]:
        quotas = (await get(tenant, namespace)).backlog_quota_map
        return {k: q.to_json() for k, q in sorted(quotas.items())}

    @api.post("/{tenant}/{namespace}/backlogQuota", status_code=NO_CONTENT)
    async def set_quota(
        tenant: str, namespace: str, body: JsonObject, backlogQuotaType: str = "destination_storage"
    ) -> None:
        kind, quota = _quota_type(backlogQuotaType), BacklogQuota.from_json(body)
        await change(tenant, namespace, lambda p: p.with_backlog_quota(kind, quota))

    @api.delete("/{tenant}/{namespace}/backlogQuota", status_code=NO_CONTENT)
    async def remove_quota(
        tenant: str, namespace: str, backlogQuotaType: str = "destination_storage"
    ) -> None:
        kind = _quota_type(backlogQuotaType)
        await change(tenant, namespace, lambda p: p.with_backlog_quota(kind, None))

    # ---- deduplication
    @api.get("/{tenant}/{namespace}/deduplication", summary="Get deduplication")
    async def get_dedup(tenant: str, namespace: str) -> Any:
        value = (await get(tenant, namespace)).deduplication_enabled
        return _none() if value is None else value

    @api.post("/{tenant}/{namespace}/deduplication", status_code=NO_CONTENT)
    async def set_dedup(tenant: str, namespace: str, body: Annotated[bool, Body()]) -> None:
        await change(tenant, namespace, lambda p: replace(p, deduplication_enabled=body))

    @api.delete("/{tenant}/{namespace}/deduplication", status_code=NO_CONTENT)
    async def remove_dedup(tenant: str, namespace: str) -> None:
        await change(tenant, namespace, lambda p: replace(p, deduplication_enabled=None))

    # ---- delayed delivery
    document_policy(
        "delayedDelivery",
        "delayed delivery",
        "delayed_delivery_policies",
        DelayedDeliveryPolicies.from_json,
    )

    # ---- auto topic creation
    document_policy(
        "autoTopicCreation",
        "auto topic creation",
        "auto_topic_creation_override",
        AutoTopicCreationOverride.from_json,
    )

    # ---- schema compatibility strategy
    @api.get("/{tenant}/{namespace}/schemaCompatibilityStrategy")
    async def get_schema_strategy(tenant: str, namespace: str) -> str:
        return (await get(tenant, namespace)).schema_compatibility_strategy

    @api.put("/{tenant}/{namespace}/schemaCompatibilityStrategy", status_code=NO_CONTENT)
    @api.post("/{tenant}/{namespace}/schemaCompatibilityStrategy", status_code=NO_CONTENT)
    async def set_schema_strategy(
        tenant: str, namespace: str, body: Annotated[str, Body()]
    ) -> None:
        value = body.upper()
        if value not in SCHEMA_COMPATIBILITY_STRATEGIES:
            choices = list(SCHEMA_COMPATIBILITY_STRATEGIES)
            raise InvalidPolicies(f"schemaCompatibilityStrategy must be one of {choices}")
        await change(tenant, namespace, lambda p: replace(p, schema_compatibility_strategy=value))

    @api.delete("/{tenant}/{namespace}/schemaCompatibilityStrategy", status_code=NO_CONTENT)
    async def remove_schema_strategy(tenant: str, namespace: str) -> None:
        await change(
            tenant, namespace, lambda p: replace(p, schema_compatibility_strategy="UNDEFINED")
        )

    # ---- replication clusters (geo-replication)
    @api.get("/{tenant}/{namespace}/replication", summary="Get the replication clusters")
    async def get_replication(tenant: str, namespace: str) -> list[str]:
        return sorted((await get(tenant, namespace)).replication_clusters)

    @api.post("/{tenant}/{namespace}/replication", status_code=NO_CONTENT)
    async def set_replication(
        tenant: str, namespace: str, body: Annotated[list[str], Body()]
    ) -> None:
        ns = await ns_of(tenant, namespace)
        known = set(await resources.list_clusters())
        allowed = (await resources.get_tenant(ns.tenant)).allowed_clusters
        clusters = replication_clusters(body, ns.tenant, known, allowed)
        await change(tenant, namespace, lambda p: replace(p, replication_clusters=clusters))

    # ---- permissions
    @api.get("/{tenant}/{namespace}/permissions", summary="Get role -> actions grants")
    async def get_permissions(tenant: str, namespace: str) -> dict[str, list[str]]:
        grants = (await get(tenant, namespace)).auth_policies.namespace_auth
        return {role: sorted(actions) for role, actions in sorted(grants.items())}

    @api.post("/{tenant}/{namespace}/permissions/{role}", status_code=NO_CONTENT)
    async def grant(
        tenant: str, namespace: str, role: str, body: Annotated[list[str], Body()]
    ) -> None:
        actions = parse_actions(body)
        await change(tenant, namespace, lambda p: p.with_grant(role, actions))

    @api.delete("/{tenant}/{namespace}/permissions/{role}", status_code=NO_CONTENT)
    async def revoke(tenant: str, namespace: str, role: str) -> None:
        await change(tenant, namespace, lambda p: p.without_grant(role))

    return api
