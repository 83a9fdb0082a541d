"""kopf handlers of Tenant, Namespace and Topic: sync on create/update/resume (and on the
drift interval, from :mod:`.resync`); delete from Pulsar only under ``deletionPolicy: Delete``
(the only case with a finalizer, so a Retain resource never hangs on deletion).

A policy an update took out of a Namespace's spec is removed from Pulsar (kopf's ``old`` spec
says which). The spec is never written: only ``status`` (conditions Ready, pulsarName,
observedGeneration, lastSyncTime; partitions for a Topic). A wait worth retrying (cluster or
parent missing) raises ``kopf.TemporaryError``; a permanent refusal stays ``Ready=False`` until
the spec changes or the drift timer tries again, never a crash loop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import kopf

from magnetar_operator import annotations as ann
from magnetar_operator.cluster_reconciler import now
from magnetar_operator.handlers.serial import one_pass_at_a_time
from magnetar_operator.kube import Kube
from magnetar_operator.pulsar_resources import (
    NamespaceDesired,
    TenantDesired,
    TopicDesired,
    deletion_policy,
)
from magnetar_operator.resource_reconciler import (
    NoTarget,
    Result,
    Target,
    delete_namespace,
    delete_tenant,
    delete_topic,
    find_target,
    resource_conditions,
    sync_namespace,
    sync_tenant,
    sync_topic,
)
from magnetar_operator.settings import OperatorSettings
from magnetar_operator.spec import InvalidSpec

Spec = Mapping[str, Any]
# (target, metadata, spec, settings, the spec before this update or None) -> (name, result)
Sync = Callable[
    [Target, Mapping[str, Any], Spec, OperatorSettings, Spec | None], Awaitable[tuple[str, Result]]
]
Delete = Callable[
    [Target, Mapping[str, Any], Mapping[str, Any], OperatorSettings], Awaitable[Result]
]


async def _tenant(
    t: Target, m: Mapping[str, Any], s: Spec, o: OperatorSettings, _: Spec | None
) -> tuple[str, Result]:
    desired = TenantDesired.parse(m, s)
    return desired.name, await sync_tenant(t, desired, o)


async def _namespace(
    t: Target, m: Mapping[str, Any], s: Spec, o: OperatorSettings, previous: Spec | None
) -> tuple[str, Result]:
    desired = NamespaceDesired.parse(m, s, previous)
    return desired.name, await sync_namespace(t, desired, o)


async def _topic(
    t: Target, m: Mapping[str, Any], s: Spec, o: OperatorSettings, _: Spec | None
) -> tuple[str, Result]:
    desired = TopicDesired.parse(m, s)
    return desired.name, await sync_topic(t, desired, o)


async def _del_tenant(
    t: Target, m: Mapping[str, Any], s: Mapping[str, Any], o: OperatorSettings
) -> Result:
    return await delete_tenant(t, TenantDesired.parse(m, s).name, o)


async def _del_namespace(
    t: Target, m: Mapping[str, Any], s: Mapping[str, Any], o: OperatorSettings
) -> Result:
    return await delete_namespace(t, NamespaceDesired.parse(m, s).name, o)


async def _del_topic(
    t: Target, m: Mapping[str, Any], s: Mapping[str, Any], o: OperatorSettings
) -> Result:
    return await delete_topic(t, TopicDesired.parse(m, s), o)


KINDS: dict[str, tuple[str, Sync, Delete]] = {
    "tenants": ("Tenant", _tenant, _del_tenant),
    "namespaces": ("Namespace", _namespace, _del_namespace),
    "topics": ("Topic", _topic, _del_topic),
}


def _ready_reason(body: Mapping[str, Any]) -> str:
    for cond in (body.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return f"{cond.get('status')}/{cond.get('reason')}"
    return ""


async def sync_resource(
    kube: Kube,
    settings: OperatorSettings,
    plural: str,
    body: Mapping[str, Any],
    *,
    drift: bool,
    previous: Spec | None = None,
) -> Result:
    """One pass over a Tenant, Namespace or Topic: Pulsar made to match, status written, an
    Event when the Ready reason changes (or, on a drift pass, when something was reverted).
    ``previous``: the spec before the update being handled (what it removed is undone).
    One pass at a time over an object (:mod:`.serial`)."""
    meta = body["metadata"]
    async with one_pass_at_a_time(plural, str(meta.get("namespace")), str(meta.get("name"))):
        return await _sync_resource(kube, settings, plural, body, drift=drift, previous=previous)


async def _sync_resource(
    kube: Kube,
    settings: OperatorSettings,
    plural: str,
    body: Mapping[str, Any],
    *,
    drift: bool,
    previous: Spec | None,
) -> Result:
    kind, sync, _ = KINDS[plural]
    meta, spec = body["metadata"], body.get("spec") or {}
    generation = meta.get("generation")
    name = ""
    try:
        target = await find_target(kube, meta["namespace"], str(spec.get("clusterRef")), settings)
        name, result = await sync(target, meta, spec, settings, previous)
    except NoTarget as exc:
        result = Result(False, exc.reason, str(exc), retry=True)
    except InvalidSpec as exc:
        result = Result(False, "InvalidSpec", str(exc))
    status: dict[str, Any] = {
        "conditions": resource_conditions(result, generation),
        "lastSyncTime": now(),
    }
    if name:
        status["pulsarName"] = name
    if result.partitions is not None:
        status["partitions"] = result.partitions
    if generation is not None:
        status["observedGeneration"] = generation
    await kube.patch_status(body, status)
    if drift and result.changed:
        what = ", ".join(result.changed)
        await kube.event(body, "Normal", "DriftReverted", f"{kind} {name}: reverted {what}")
    elif f"{'True' if result.ready else 'False'}/{result.reason}" != _ready_reason(body):
        kind_of = "Normal" if result.ready else "Warning"
        await kube.event(body, kind_of, result.reason, result.message)
    return result


def _deletes(spec: kopf.Spec, **_: Any) -> bool:
    return deletion_policy(spec) == "Delete"


def register(registry: kopf.OperatorRegistry, settings: OperatorSettings) -> None:
    for plural in KINDS:
        _register_kind(registry, settings, plural)


def _register_kind(
    registry: kopf.OperatorRegistry, settings: OperatorSettings, plural: str
) -> None:
    group, version = ann.GROUP, ann.VERSION

    backoff = settings.retry_delay_s

    @kopf.on.resume(group, version, plural, registry=registry, backoff=backoff)
    @kopf.on.create(group, version, plural, registry=registry, backoff=backoff)
    @kopf.on.update(group, version, plural, registry=registry, backoff=backoff, field="spec")
    async def sync(body: kopf.Body, memo: Any, old: Any = None, **_: Any) -> None:
        # On update, ``old`` is the spec before it (the handler watches the spec field);
        # kopf hands the same one again when it retries after a TemporaryError.
        previous = old if isinstance(old, Mapping) else None
        result = await sync_resource(
            memo.kube, memo.settings, plural, dict(body), drift=False, previous=previous
        )
        if result.retry:
            raise kopf.TemporaryError(result.message, delay=memo.settings.retry_delay_s)

    @kopf.on.delete(group, version, plural, registry=registry, when=_deletes, backoff=backoff)
    async def delete(body: kopf.Body, memo: Any, **_: Any) -> None:
        remove = KINDS[plural][2]
        meta, spec = body["metadata"], body.get("spec") or {}
        try:
            target = await find_target(
                memo.kube, meta["namespace"], str(spec.get("clusterRef")), memo.settings
            )
        except NoTarget as exc:
            if exc.reason == "ClusterNotFound":
                return  # the cluster is gone, and its data with it
            raise kopf.TemporaryError(str(exc), delay=memo.settings.retry_delay_s) from exc
        try:
            result = await remove(target, meta, spec, memo.settings)
        except InvalidSpec:
            return  # never created under an invalid name
        if not result.ready:
            raise kopf.TemporaryError(result.message, delay=memo.settings.retry_delay_s)
