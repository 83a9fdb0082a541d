"""kopf handlers of PulsarCluster: reconcile on create, update and resume; delete the bookies'
volumes on delete when the user opted in (the only case with a finalizer).

:func:`sync_cluster` is one pass (also run by :mod:`.resync` on an interval): reconcile,
write the status subresource, post an Event when the Progressing reason changes. In the
change handlers a wait (a roll in progress, a decommission, etcd not ready) becomes
``kopf.TemporaryError`` so kopf retries after ``retry_delay_s``; an invalid spec sets
``Ready=False`` with reason InvalidSpec and waits for the spec to change. The ``kube`` and
``settings`` come from kopf's ``memo`` (set by the entry point).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import kopf

from magnetar_operator import annotations as ann
from magnetar_operator.cluster_reconciler import Outcome, delete_bookie_volumes, reconcile
from magnetar_operator.handlers.serial import one_pass_at_a_time
from magnetar_operator.kube import Kube
from magnetar_operator.settings import OperatorSettings

PLURAL = "pulsarclusters"


def _progress(status: Mapping[str, Any]) -> tuple[str, str]:
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Progressing":
            return str(cond.get("reason", "")), str(cond.get("message", ""))
    return "", ""


def _adopt(owner: Mapping[str, Any]) -> Any:
    def adopt(obj: dict[str, Any]) -> None:
        kopf.adopt(obj, owner=cast(kopf.Body, owner))  # reads only its metadata

    return adopt


async def sync_cluster(
    kube: Kube, settings: OperatorSettings, body: Mapping[str, Any], *, changed: bool = False
) -> Outcome:
    """One pass over the PulsarCluster ``body``: children, status, Events (the immutable-field
    warning only on a pass for a change of the resource, not on every periodic pass). One
    pass at a time over a cluster (:mod:`.serial`)."""
    meta = body.get("metadata", {})
    async with one_pass_at_a_time(PLURAL, str(meta.get("namespace")), str(meta.get("name"))):
        return await _sync_cluster(kube, settings, body, changed=changed)


async def _sync_cluster(
    kube: Kube, settings: OperatorSettings, body: Mapping[str, Any], *, changed: bool
) -> Outcome:
    outcome = await reconcile(kube, body, _adopt(body), settings)
    await kube.patch_status(body, outcome.status)
    before = _progress(body.get("status") or {})
    after = _progress(outcome.status)
    if after[0] and after[0] != before[0]:
        wait = outcome.plan.wait if outcome.plan else None
        warn = outcome.invalid is not None or (wait is not None and wait.degraded)
        await kube.event(body, "Warning" if warn else "Normal", after[0], after[1])
    if outcome.frozen and changed:
        message = (
            f"not changed on the existing objects (Kubernetes refuses it): "
            f"{', '.join(outcome.frozen)}; resize volumes through their PersistentVolumeClaims"
        )
        await kube.event(body, "Warning", "ImmutableFieldNotChanged", message)
    return outcome


def _volumes_deleted_on_delete(spec: kopf.Spec, **_: Any) -> bool:
    return (spec.get("bookies") or {}).get("retainVolumesOnDelete") is False


def register(registry: kopf.OperatorRegistry, settings: OperatorSettings) -> None:
    backoff = settings.retry_delay_s

    @kopf.on.resume(ann.GROUP, ann.VERSION, PLURAL, registry=registry, backoff=backoff)
    @kopf.on.create(ann.GROUP, ann.VERSION, PLURAL, registry=registry, backoff=backoff)
    @kopf.on.update(ann.GROUP, ann.VERSION, PLURAL, registry=registry, backoff=backoff)
    async def reconcile_cluster(body: kopf.Body, memo: Any, **_: Any) -> None:
        outcome = await sync_cluster(memo.kube, memo.settings, dict(body), changed=True)
        wait = outcome.plan.wait if outcome.plan else None
        paused = ann.is_true((body.get("metadata", {}).get("annotations") or {}).get(ann.PAUSE))
        if wait is not None and not paused:
            raise kopf.TemporaryError(wait.message, delay=memo.settings.retry_delay_s)

    @kopf.on.delete(
        ann.GROUP,
        ann.VERSION,
        PLURAL,
        registry=registry,
        backoff=backoff,
        when=_volumes_deleted_on_delete,
    )
    async def delete_cluster(body: kopf.Body, memo: Any, logger: Any, **_: Any) -> None:
        deleted = await delete_bookie_volumes(memo.kube, body)
        if deleted:
            logger.info("deleted the bookie volumes %s (retainVolumesOnDelete: false)", deleted)
