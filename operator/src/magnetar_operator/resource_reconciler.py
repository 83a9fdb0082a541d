"""The I/O shell of Tenant, Namespace and Topic: make Pulsar match the spec, one way.

Each ``sync_*`` reads the actual tenant, namespace or topic through the admin REST API,
creates it when missing and sets every setting the spec names that differs (drift is reverted
the same way, on the handler's timer), and removes a namespace policy an update took out of the
spec; each ``delete_*`` removes it ("not found" is success).
The result is a :class:`Result` the handler turns into the ``Ready`` condition; nothing here
raises for an admin error: a bad spec or a refusal is ``Ready=False`` with the reason, and
``retry`` says whether waiting may help (a missing tenant or namespace, an unreachable
cluster).

The admin URL is the referenced PulsarCluster's ``status.endpoints.brokerWebUrl`` (or
``webUrl``), read through :class:`~magnetar_operator.kube.Kube`. Called from kopf handler
tasks; no state between calls.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from magnetar.client.admin import AdminClient
from magnetar.client.admin_errors import AdminError, Conflict, NotFound
from magnetar_operator import annotations as ann
from magnetar_operator.credentials import operator_token
from magnetar_operator.kube import Kube
from magnetar_operator.pulsar_resources import NamespaceDesired, TenantDesired, TopicDesired
from magnetar_operator.settings import OperatorSettings


@dataclass(frozen=True)
class Result:
    ready: bool
    reason: str
    message: str
    retry: bool = False
    changed: list[str] = field(default_factory=list)  # what was created or reverted
    partitions: int | None = None


@dataclass(frozen=True)
class Target:
    """The cluster a resource lives in: its admin URL and Pulsar cluster name."""

    admin_url: str
    cluster_name: str
    auth_token: str | None = field(default=None, repr=False)  # the operator's, with auth on


class NoTarget(Exception):
    """The referenced PulsarCluster is missing or has no endpoints yet."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


async def find_target(
    kube: Kube, namespace: str, cluster_ref: str, settings: OperatorSettings
) -> Target:
    cluster = await kube.get(ann.API_VERSION, "PulsarCluster", namespace, cluster_ref)
    if cluster is None:
        raise NoTarget("ClusterNotFound", f"PulsarCluster {namespace}/{cluster_ref} not found")
    endpoints = (cluster.get("status") or {}).get("endpoints") or {}
    url = settings.broker_admin_url or endpoints.get("brokerWebUrl") or endpoints.get("webUrl")
    if not url:
        raise NoTarget("ClusterNotReady", f"PulsarCluster {cluster_ref} has no endpoints yet")
    name = (cluster.get("spec") or {}).get("clusterName") or cluster["metadata"]["name"]
    token = await operator_token(kube, namespace, cluster)
    if token is None and ((cluster.get("spec") or {}).get("auth") or {}).get("enabled"):
        raise NoTarget(
            "CredentialsNotReady",
            f"PulsarCluster {cluster_ref} has auth on and its operator token is not made yet",
        )
    return Target(str(url), str(name), token)


def _failed(what: str, exc: AdminError) -> Result:
    retry = bool(getattr(exc, "retryable", False))
    return Result(False, type(exc).__name__, f"{what}: {exc}", retry=retry)


async def _with_admin(
    target: Target,
    settings: OperatorSettings,
    what: str,
    run: Callable[[AdminClient], Awaitable[Result]],
) -> Result:
    try:
        async with AdminClient(
            target.admin_url, timeout_s=settings.admin_timeout_s, auth_token=target.auth_token
        ) as admin:
            return await run(admin)
    except AdminError as exc:
        return _failed(what, exc)


# ---------------------------------------------------------------------------------- tenants


async def sync_tenant(target: Target, desired: TenantDesired, settings: OperatorSettings) -> Result:
    info = desired.info(target.cluster_name)

    async def run(admin: AdminClient) -> Result:
        try:
            actual = await admin.get_tenant(desired.name)
        except NotFound:
            await admin.create_tenant(desired.name, info)
            return Result(True, "Created", f"tenant {desired.name} created", changed=["created"])
        if actual == info:
            return Result(True, "InSync", f"tenant {desired.name} matches the spec")
        await admin.update_tenant(desired.name, info)
        drift = [
            f for f in ("admin_roles", "allowed_clusters") if getattr(actual, f) != getattr(info, f)
        ]
        return Result(
            True, "Updated", f"tenant {desired.name} updated: {', '.join(drift)}", changed=drift
        )

    return await _with_admin(target, settings, f"tenant {desired.name}", run)


async def delete_tenant(target: Target, name: str, settings: OperatorSettings) -> Result:
    async def run(admin: AdminClient) -> Result:
        try:
            await admin.delete_tenant(name)
        except NotFound:
            pass
        except Conflict as exc:
            return Result(False, "TenantNotEmpty", f"tenant {name}: {exc}", retry=True)
        return Result(True, "Deleted", f"tenant {name} deleted")

    return await _with_admin(target, settings, f"tenant {name}", run)


# ---------------------------------------------------------------------------------- namespaces


async def sync_namespace(
    target: Target, desired: NamespaceDesired, settings: OperatorSettings
) -> Result:
    ns = desired.name

    async def run(admin: AdminClient) -> Result:
        changed: list[str] = []
        tenant = ns.split("/", 1)[0]
        try:
            existing = await admin.list_namespaces(tenant)
        except NotFound:
            return Result(
                False, "TenantNotFound", f"tenant {tenant} does not exist yet", retry=True
            )
        if ns not in existing:
            body = {} if desired.bundles is None else {"bundles": {"numBundles": desired.bundles}}
            try:
                await admin.create_namespace(ns, body)
                changed.append("created")
            except Conflict:
                pass  # created meanwhile
        if desired.retention is not None and await admin.get_retention(ns) != desired.retention:
            await admin.set_retention(ns, desired.retention)
            changed.append("retention")
        if (
            desired.message_ttl_s is not None
            and (await admin.get_message_ttl(ns) or 0) != desired.message_ttl_s
        ):
            await admin.set_message_ttl(ns, desired.message_ttl_s)
            changed.append("messageTTLSeconds")
        if desired.backlog_quota is not None:
            quotas = await admin.get_backlog_quotas(ns)
            if quotas.get("destination_storage") != desired.backlog_quota:
                await admin.set_backlog_quota(ns, desired.backlog_quota)
                changed.append("backlogQuota")
        if (
            desired.deduplication is not None
            and await admin.get_deduplication(ns) != desired.deduplication
        ):
            await admin.set_deduplication(ns, desired.deduplication)
            changed.append("deduplication")
        auto = desired.auto_topic_creation
        if auto is not None and await admin.get_auto_topic_creation(ns) != auto:
            await admin.set_auto_topic_creation(ns, auto)
            changed.append("autoTopicCreation")
        persistence = desired.persistence
        if persistence is not None and await admin.get_persistence(ns) != persistence:
            await admin.set_persistence(ns, persistence)
            changed.append("persistence")
        for key in desired.removed:
            await _remove_policy(admin, ns, key, target.cluster_name)
            changed.append(f"{key} removed")
        clusters = desired.replication_clusters
        if clusters is not None and set(await admin.get_replication_clusters(ns)) != clusters:
            await admin.set_replication_clusters(ns, clusters)
            changed.append("replicationClusters")
        reason = "Created" if "created" in changed else ("Updated" if changed else "InSync")
        return Result(True, reason, f"namespace {ns} matches the spec", changed=changed)

    return await _with_admin(target, settings, f"namespace {ns}", run)


async def _remove_policy(admin: AdminClient, ns: str, key: str, local_cluster: str) -> None:
    """Undo a policy the spec no longer names: the broker's default applies again. Pulsar has
    no "remove" for replication clusters: the namespace is left on its own cluster only."""
    if key == "retention":
        await admin.remove_retention(ns)
    elif key == "messageTTLSeconds":
        await admin.remove_message_ttl(ns)
    elif key == "backlogQuota":
        await admin.remove_backlog_quota(ns)
    elif key == "deduplication":
        await admin.remove_deduplication(ns)
    elif key == "autoTopicCreation":
        await admin.remove_auto_topic_creation(ns)
    elif key == "persistence":
        await admin.remove_persistence(ns)
    elif key == "replicationClusters":
        await admin.set_replication_clusters(ns, [local_cluster])


async def delete_namespace(target: Target, name: str, settings: OperatorSettings) -> Result:
    async def run(admin: AdminClient) -> Result:
        try:
            await admin.delete_namespace(name)
        except NotFound:
            pass
        except Conflict as exc:
            return Result(False, "NamespaceNotEmpty", f"namespace {name}: {exc}", retry=True)
        return Result(True, "Deleted", f"namespace {name} deleted")

    return await _with_admin(target, settings, f"namespace {name}", run)


# ---------------------------------------------------------------------------------- topics


async def sync_topic(target: Target, desired: TopicDesired, settings: OperatorSettings) -> Result:
    topic = desired.name

    async def run(admin: AdminClient) -> Result:
        try:
            if desired.partitions == 0:
                return await _sync_plain_topic(admin, desired)
            return await _sync_partitioned_topic(admin, desired)
        except NotFound as exc:
            why = f"namespace {desired.namespace} does not exist yet ({exc})"
            return Result(False, "NamespaceNotFound", why, retry=True)

    return await _with_admin(target, settings, f"topic {topic}", run)


async def _sync_plain_topic(admin: AdminClient, desired: TopicDesired) -> Result:
    topics = await admin.list_topics(desired.namespace)
    if desired.name in topics:
        return Result(True, "InSync", f"topic {desired.name} exists", partitions=0)
    partitioned = await admin.get_partitioned_topic_metadata(desired.name)
    if partitioned.partitions > 0:
        why = f"{desired.name} exists with {partitioned.partitions} partitions; the spec says 0"
        return Result(False, "PartitionsMismatch", why, partitions=partitioned.partitions)
    with contextlib.suppress(Conflict):  # created meanwhile
        await admin.create_topic(desired.name)
    why = f"topic {desired.name} created"
    return Result(True, "Created", why, changed=["created"], partitions=0)


async def _sync_partitioned_topic(admin: AdminClient, desired: TopicDesired) -> Result:
    actual = (await admin.get_partitioned_topic_metadata(desired.name)).partitions
    if actual == desired.partitions:
        return Result(
            True, "InSync", f"topic {desired.name} has {actual} partitions", partitions=actual
        )
    if actual == 0:
        await admin.create_partitioned_topic(desired.name, desired.partitions)
        why = f"topic {desired.name} created with {desired.partitions} partitions"
        return Result(True, "Created", why, changed=["created"], partitions=desired.partitions)
    if actual < desired.partitions:
        await admin.update_partitioned_topic(desired.name, desired.partitions)
        why = f"topic {desired.name} grown from {actual} to {desired.partitions} partitions"
        return Result(True, "Updated", why, changed=["partitions"], partitions=desired.partitions)
    why = (
        f"topic {desired.name} has {actual} partitions, more than the spec's "
        f"{desired.partitions}; partitions cannot shrink"
    )
    return Result(False, "PartitionsCannotShrink", why, partitions=actual)


async def delete_topic(target: Target, desired: TopicDesired, settings: OperatorSettings) -> Result:
    async def run(admin: AdminClient) -> Result:
        try:
            if desired.partitions > 0:
                await admin.delete_partitioned_topic(desired.name, force=True)
            else:
                await admin.delete_topic(desired.name, force=True)
        except NotFound:
            pass
        return Result(True, "Deleted", f"topic {desired.name} deleted")

    return await _with_admin(target, settings, f"topic {desired.name}", run)


def resource_conditions(result: Result, generation: int | None) -> list[dict[str, Any]]:
    """The one ``Ready`` condition of a Tenant, Namespace or Topic (pure)."""
    cond: dict[str, Any] = {
        "type": "Ready",
        "status": "True" if result.ready else "False",
        "reason": result.reason,
        "message": result.message,
    }
    if generation is not None:
        cond["observedGeneration"] = generation
    return [cond]
