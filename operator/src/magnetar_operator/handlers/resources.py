"""kopf handlers of Tenant, Namespace and Topic: sync on create/update/resume and on a drift
timer; delete from Pulsar only under ``deletionPolicy: Delete`` (the only case with a
finalizer, so a Retain resource never hangs on deletion).

The spec is never written: only ``status`` (conditions Ready, pulsarName, observedGeneration,
lastSyncTime; partitions for a Topic). A wait worth retrying (cluster or parent missing)
raises ``kopf.TemporaryError``; a permanent refusal stays ``Ready=False`` until the spec
changes or the drift timer tries again, never a crash loop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import kopf

from magnetar_operator import annotations as ann
from magnetar_operator.cluster_reconciler import now
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

Sync = Callable[
    [Target, Mapping[str, Any], Mapping[str, Any], OperatorSettings], Awaitable[tuple[str, Result]]
]
Delete = Callable[
    [Target, Mapping[str, Any], Mapping[str, Any], OperatorSettings], Awaitable[Result]
]


async def _tenant(
    t: Target, m: Mapping[str, Any], s: Mapping[str, Any], o: OperatorSettings
) -> tuple[str, Result]:
    desired = TenantDesired.parse(m, s)
    return desired.name, await sync_tenant(t, desired, o)


async def _namespace(
    t: Target, m: Mapping[str, Any], s: Mapping[str, Any], o: OperatorSettings
) -> tuple[str, Result]:
    desired = NamespaceDesired.parse(m, s)
    return desired.name, await sync_namespace(t, desired, o)


async def _topic(
    t: Target, m: Mapping[str, Any], s: Mapping[str, Any], o: OperatorSettings
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


def _ready_reason(body: kopf.Body) -> str:
    for cond in (body.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return f"{cond.get('status')}/{cond.get('reason')}"
    return ""


async def _sync(plural: str, body: kopf.Body, patch: kopf.Patch, memo: Any, timer: bool) -> None:
    kind, sync, _ = KINDS[plural]
    kube: Kube = memo.kube
    settings: OperatorSettings = memo.settings
    meta, spec = body["metadata"], body.get("spec") or {}
    generation = meta.get("generation")
    name = ""
    try:
        target = await find_target(kube, meta["namespace"], str(spec.get("clusterRef")), settings)
        name, result = await sync(target, meta, spec, settings)
    except NoTarget as exc:
        result = Result(False, exc.reason, str(exc), retry=True)
    except InvalidSpec as exc:
        result = Result(False, "InvalidSpec", str(exc))
    patch.status["conditions"] = resource_conditions(result, generation)
    patch.status["lastSyncTime"] = now()
    if name:
        patch.status["pulsarName"] = name
    if result.partitions is not None:
        patch.status["partitions"] = result.partitions
    if generation is not None:
        patch.status["observedGeneration"] = generation
    if f"{'True' if result.ready else 'False'}/{result.reason}" != _ready_reason(body):
        kind_of = "Normal" if result.ready else "Warning"
        kopf.event(body, type=kind_of, reason=result.reason, message=result.message)
    elif timer and result.changed:
        kopf.event(
            body,
            type="Normal",
            reason="DriftReverted",
            message=f"{kind} {name}: reverted {', '.join(result.changed)}",
        )
    if result.retry and not timer:
        raise kopf.TemporaryError(result.message, delay=settings.retry_delay_s)


def _deletes(spec: kopf.Spec, **_: Any) -> bool:
    return deletion_policy(spec) == "Delete"


def register(registry: kopf.OperatorRegistry, settings: OperatorSettings) -> None:
    for plural in KINDS:
        _register_kind(registry, settings, plural)


def _register_kind(
    registry: kopf.OperatorRegistry, settings: OperatorSettings, plural: str
) -> None:
    group, version = ann.GROUP, ann.VERSION

    @kopf.on.resume(group, version, plural, registry=registry)
    @kopf.on.create(group, version, plural, registry=registry)
    @kopf.on.update(group, version, plural, registry=registry, field="spec")
    async def sync(body: kopf.Body, patch: kopf.Patch, memo: Any, **_: Any) -> None:
        await _sync(plural, body, patch, memo, timer=False)

    @kopf.timer(
        group, version, plural, id="drift", registry=registry, interval=settings.drift_interval_s
    )
    async def revert_drift(body: kopf.Body, patch: kopf.Patch, memo: Any, **_: Any) -> None:
        await _sync(plural, body, patch, memo, timer=True)

    @kopf.on.delete(group, version, plural, registry=registry, when=_deletes)
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
