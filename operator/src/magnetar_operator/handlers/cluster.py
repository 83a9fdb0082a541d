"""kopf handlers of PulsarCluster: reconcile on create/update/resume and on a timer; delete the
bookies' volumes on delete when the user opted in (the only case with a finalizer).

A wait (a roll in progress, a decommission, etcd not ready) patches the status and raises
``kopf.TemporaryError`` so kopf retries after ``retry_delay_s``; an invalid spec sets
``Ready=False`` with reason InvalidSpec and is not retried until the spec changes. The
``kube`` and ``settings`` come from kopf's ``memo`` (set by the entry point).
"""

from __future__ import annotations

from typing import Any

import kopf

from magnetar_operator import annotations as ann
from magnetar_operator.cluster_reconciler import Outcome, delete_bookie_volumes, reconcile
from magnetar_operator.kube import Kube
from magnetar_operator.settings import OperatorSettings

PLURAL = "pulsarclusters"


def _progress_reason(status: dict[str, Any]) -> tuple[str, str]:
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Progressing":
            return str(cond.get("reason", "")), str(cond.get("message", ""))
    return "", ""


async def _run(body: kopf.Body, patch: kopf.Patch, memo: Any, raise_waits: bool) -> Outcome:
    kube: Kube = memo.kube
    settings: OperatorSettings = memo.settings

    def adopt(obj: dict[str, Any]) -> None:
        kopf.adopt(obj, owner=body)

    outcome = await reconcile(kube, body, adopt, settings)
    patch.status.update(outcome.status)
    before = _progress_reason(dict(body.get("status") or {}))
    after = _progress_reason(outcome.status)
    if outcome.invalid is not None:
        if before[0] != "InvalidSpec":
            kopf.event(body, type="Warning", reason="InvalidSpec", message=outcome.invalid)
        return outcome
    wait = outcome.plan.wait if outcome.plan else None
    if after[0] != before[0] and after[0]:
        kind = "Warning" if wait is not None and wait.degraded else "Normal"
        kopf.event(body, type=kind, reason=after[0], message=after[1])
    if raise_waits and wait is not None and not _paused(body):
        raise kopf.TemporaryError(wait.message, delay=settings.retry_delay_s)
    return outcome


def _paused(body: kopf.Body) -> bool:
    annotations = body.get("metadata", {}).get("annotations") or {}
    return ann.is_true(annotations.get(ann.PAUSE))


def _volumes_deleted_on_delete(spec: kopf.Spec, **_: Any) -> bool:
    return (spec.get("bookies") or {}).get("retainVolumesOnDelete") is False


def register(registry: kopf.OperatorRegistry, settings: OperatorSettings) -> None:
    @kopf.on.resume(ann.GROUP, ann.VERSION, PLURAL, registry=registry)
    @kopf.on.create(ann.GROUP, ann.VERSION, PLURAL, registry=registry)
    @kopf.on.update(ann.GROUP, ann.VERSION, PLURAL, registry=registry)
    async def reconcile_cluster(body: kopf.Body, patch: kopf.Patch, memo: Any, **_: Any) -> None:
        await _run(body, patch, memo, raise_waits=True)

    @kopf.timer(
        ann.GROUP,
        ann.VERSION,
        PLURAL,
        id="resync",
        registry=registry,
        interval=settings.resync_interval_s,
    )
    async def resync_cluster(body: kopf.Body, patch: kopf.Patch, memo: Any, **_: Any) -> None:
        """Level-based: children drift back, status follows the children."""
        await _run(body, patch, memo, raise_waits=False)

    @kopf.on.delete(
        ann.GROUP, ann.VERSION, PLURAL, registry=registry, when=_volumes_deleted_on_delete
    )
    async def delete_cluster(body: kopf.Body, memo: Any, logger: Any, **_: Any) -> None:
        deleted = await delete_bookie_volumes(memo.kube, body)
        if deleted:
            logger.info("deleted the bookie volumes %s (retainVolumesOnDelete: false)", deleted)
