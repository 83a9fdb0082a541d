"""The I/O shell of a PulsarCluster reconcile: observe, plan, apply, compute the status.

:func:`reconcile` reads the children through :class:`~magnetar_operator.kube.Kube` and the
bookie view through the brokers' admin REST API, asks the pure
:func:`~magnetar_operator.rollout.plan` what to do, applies it unless reconciliation is paused,
and returns the status the pure :func:`~magnetar_operator.status.cluster_status` computes. It
never writes the PulsarCluster (the kopf handler patches its status) and never sleeps: a wait
is returned, and the handler turns it into ``kopf.TemporaryError``.

Called from kopf handler tasks of the operator's loop; it keeps no state between calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from magnetar.client.admin import AdminClient
from magnetar.client.admin_errors import AdminError, NotFound
from magnetar_operator.credentials import CredentialsError, ensure_credentials
from magnetar_operator.kube import Kube, KubeError
from magnetar_operator.manifests import Obj
from magnetar_operator.manifests.audit import SPARK_API
from magnetar_operator.names import (
    AUDIT,
    AUTORECOVERY,
    BOOKIE,
    BROKER,
    ETCD,
    INIT,
    PROXY,
    bookie_id,
    broker_web_url,
    child,
    labels,
)
from magnetar_operator.observed import BookieAdmin, Observed, Workload, last_audit
from magnetar_operator.rollout import Plan, plan
from magnetar_operator.settings import OperatorSettings
from magnetar_operator.spec import ClusterSpec, InvalidSpec
from magnetar_operator.status import cluster_status, invalid_status

Adopt = Callable[[Obj], None]


@dataclass(frozen=True)
class Outcome:
    status: dict[str, Any]
    plan: Plan | None  # None: the spec is invalid
    invalid: str | None = None
    frozen: list[str] = field(default_factory=list)  # immutable fields left as they were


def now() -> str:
    return datetime.datetime.now(tz=datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def admin_url(spec: ClusterSpec, settings: OperatorSettings) -> str:
    return settings.broker_admin_url or broker_web_url(spec)


async def _workload(kube: Kube, kind: str, spec: ClusterSpec, component: str) -> Workload | None:
    return Workload.of(await kube.get("apps/v1", kind, spec.namespace, child(spec, component)))


def _admin(spec: ClusterSpec, settings: OperatorSettings, token: str | None) -> AdminClient:
    """The admin client of the cluster, with the operator's token when auth is on."""
    return AdminClient(
        admin_url(spec, settings), timeout_s=settings.admin_timeout_s, auth_token=token
    )


async def _bookie_admin(
    spec: ClusterSpec, bookies: Workload | None, settings: OperatorSettings, token: str | None
) -> BookieAdmin:
    """Ask the admin API only what the plan may need: the under-replicated count while a roll
    is under way, the decommission of the highest bookie while scaling down."""
    if bookies is None:
        return BookieAdmin()
    rolling = bookies.partition > 0
    victim = (
        bookie_id(spec, bookies.replicas - 1) if spec.bookies.replicas < bookies.replicas else None
    )
    if not rolling and victim is None:
        return BookieAdmin()
    under: int | None = None
    decommissions: dict[str, Mapping[str, Any]] = {}
    try:
        async with _admin(spec, settings, token) as admin:
            if rolling:
                under = await admin.get_under_replicated_count()
            if victim is not None:
                with contextlib.suppress(NotFound):  # none asked for yet
                    decommissions[victim] = await admin.get_decommission(victim)
    except AdminError as exc:
        return BookieAdmin(under, decommissions, error=str(exc))
    return BookieAdmin(under, decommissions)


async def _last_audit(kube: Kube, spec: ClusterSpec) -> dict[str, str] | None:
    scheduled = await kube.get(
        SPARK_API, "ScheduledSparkApplication", spec.namespace, child(spec, AUDIT)
    )
    run = ((scheduled or {}).get("status") or {}).get("lastRunName")
    application = (
        await kube.get(SPARK_API, "SparkApplication", spec.namespace, str(run)) if run else None
    )
    return last_audit(scheduled, application)


async def _none() -> None:
    return None


async def observe(
    kube: Kube,
    spec: ClusterSpec,
    previous: Mapping[str, Any],
    settings: OperatorSettings,
    token: str | None = None,
) -> Observed:
    job = await kube.get("batch/v1", "Job", spec.namespace, child(spec, INIT))
    job_status = (job or {}).get("status") or {}
    failed = [
        c.get("message") or "the init Job failed"
        for c in job_status.get("conditions") or []
        if c.get("type") == "Failed" and c.get("status") == "True"
    ]
    # independent reads: at once (each runs in a worker thread); one failing cancels the rest
    async with asyncio.TaskGroup() as reads:
        etcd = reads.create_task(_workload(kube, "StatefulSet", spec, ETCD))
        bookies = reads.create_task(_workload(kube, "StatefulSet", spec, BOOKIE))
        brokers = reads.create_task(_workload(kube, "Deployment", spec, BROKER))
        proxy = reads.create_task(
            _workload(kube, "Deployment", spec, PROXY) if spec.proxy.enabled else _none()
        )
        recovery = reads.create_task(
            _workload(kube, "Deployment", spec, AUTORECOVERY)
            if spec.autorecovery.enabled
            else _none()
        )
    before = {c.get("type"): c.get("status") for c in previous.get("conditions") or []}
    return Observed(
        etcd=etcd.result(),
        init_succeeded=int(job_status.get("succeeded") or 0) >= 1,
        init_failed_message=failed[0] if failed else None,
        bookies=bookies.result(),
        brokers=brokers.result(),
        proxy=proxy.result(),
        autorecovery=recovery.result(),
        admin=await _bookie_admin(spec, bookies.result(), settings, token),
        last_audit=await _last_audit(kube, spec) if spec.audit.enabled else None,
        metadata_initialized_before=before.get("MetadataInitialized") == "True",
    )


async def _act(
    kube: Kube,
    spec: ClusterSpec,
    planned: Plan,
    adopt: Adopt,
    settings: OperatorSettings,
    token: str | None,
) -> list[str]:
    """Apply the plan; the immutable fields that could not follow the spec."""
    frozen: list[str] = []
    for obj in planned.apply:
        adopt(obj)
        _, _, fields = await kube.apply(obj)
        frozen += [f"{obj['metadata']['name']} {field}" for field in fields]
    for obj in planned.create:
        adopt(obj)
        await kube.create_if_missing(obj)
    if planned.decommission:
        async with _admin(spec, settings, token) as admin:
            for bookie in planned.decommission:
                await admin.decommission_bookie(bookie)
    return frozen


async def reconcile(
    kube: Kube,
    body: Mapping[str, Any],
    adopt: Adopt,
    settings: OperatorSettings,
) -> Outcome:
    """One level-based pass over the PulsarCluster ``body``; see the module docstring."""
    meta = body.get("metadata", {})
    previous = body.get("status") or {}
    generation = meta.get("generation")
    try:
        spec = ClusterSpec.parse(
            meta["name"], meta["namespace"], body.get("spec") or {}, meta.get("annotations")
        )
    except InvalidSpec as exc:
        status = invalid_status(str(exc), generation=generation, previous=previous, now=now())
        return Outcome(status, None, str(exc))
    try:
        token = await ensure_credentials(kube, spec, adopt, write=not spec.paused)
    except CredentialsError as exc:
        status = invalid_status(
            str(exc), generation=generation, previous=previous, now=now(), reason=exc.reason
        )
        return Outcome(status, None, str(exc))
    seen = await observe(kube, spec, previous, settings, token)
    planned = plan(spec, seen)
    frozen = [] if spec.paused else await _act(kube, spec, planned, adopt, settings, token)
    status = cluster_status(
        spec, seen, planned, generation=generation, previous=previous, now=now()
    )
    return Outcome(status, planned, frozen=frozen)


async def delete_bookie_volumes(kube: Kube, body: Mapping[str, Any]) -> list[str]:
    """Delete the bookies' PersistentVolumeClaims (the user opted out of keeping them)."""
    meta = body.get("metadata", {})
    spec = ClusterSpec.parse(meta["name"], meta["namespace"], body.get("spec") or {})
    selector = labels(spec, BOOKIE)
    deleted = []
    for claim in await kube.list_labelled("v1", "PersistentVolumeClaim", spec.namespace, selector):
        name = claim["metadata"]["name"]
        try:
            if await kube.delete("v1", "PersistentVolumeClaim", spec.namespace, name):
                deleted.append(name)
        except KubeError as exc:
            if exc.status != 404:  # not found on delete is success
                raise
    return deleted
