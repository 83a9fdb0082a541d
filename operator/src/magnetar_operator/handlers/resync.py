"""The periodic pass: every PulsarCluster, Tenant, Namespace and Topic, again and again.

Level-based reconciliation needs a look at each object even when nothing about it changed:
a child changed its status, someone edited a topic behind the operator's back. kopf timers
would do it, but each timer puts a finalizer on its object, and a finalizer where none is
needed is how deletions hang when the operator is gone (KUBERNETES.md, pain 8). So one task,
started and stopped with the operator, lists the objects and runs the same pass the change
handlers run: PulsarClusters every ``resync_interval_s``, the others every
``drift_interval_s`` (drift is reverted and reported with a ``DriftReverted`` Event).

One task on the operator's loop; a failing object is logged and skipped, never stops the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

import kopf

from magnetar_operator import annotations as ann
from magnetar_operator.handlers.cluster import sync_cluster
from magnetar_operator.handlers.resources import KINDS, sync_resource
from magnetar_operator.kube import Kube, KubeError
from magnetar_operator.settings import OperatorSettings

log = logging.getLogger(__name__)


async def _pass(kube: Kube, settings: OperatorSettings, plurals: list[str]) -> None:
    for plural in plurals:
        kind = "PulsarCluster" if plural == "pulsarclusters" else KINDS[plural][0]
        for body in await kube.list_all(ann.API_VERSION, kind, settings.namespace):
            if body.get("metadata", {}).get("deletionTimestamp"):
                continue
            body.setdefault("apiVersion", ann.API_VERSION)
            body.setdefault("kind", kind)
            try:
                if plural == "pulsarclusters":
                    await sync_cluster(kube, settings, body)
                else:
                    await sync_resource(kube, settings, plural, body, drift=True)
            except (KubeError, OSError) as exc:
                name = body.get("metadata", {}).get("name")
                log.warning("resync of %s %s failed: %s", kind, name, exc)


ALL = ("pulsarclusters", *KINDS)


async def resync_forever(
    kube: Kube, settings: OperatorSettings, plurals: tuple[str, ...] = ALL
) -> None:
    """Run the passes over ``plurals`` until cancelled."""
    last: dict[str, float] = {"clusters": 0.0, "resources": 0.0}
    tick = min(settings.resync_interval_s, settings.drift_interval_s)
    while True:
        await asyncio.sleep(tick)
        now = time.monotonic()
        due = []
        if now - last["clusters"] >= settings.resync_interval_s:
            due.append("pulsarclusters")
            last["clusters"] = now
        if now - last["resources"] >= settings.drift_interval_s:
            due += list(KINDS)
            last["resources"] = now
        due = [plural for plural in due if plural in plurals]
        try:
            await _pass(kube, settings, due)
        except (KubeError, OSError) as exc:
            log.warning("resync pass failed: %s", exc)


def register(
    registry: kopf.OperatorRegistry, settings: OperatorSettings, plurals: tuple[str, ...] = ALL
) -> None:
    @kopf.on.startup(registry=registry)
    async def start_resync(memo: Any, **_: Any) -> None:
        memo.resync = asyncio.create_task(resync_forever(memo.kube, memo.settings, plurals))

    @kopf.on.cleanup(registry=registry)
    async def stop_resync(memo: Any, **_: Any) -> None:
        task = getattr(memo, "resync", None)
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
