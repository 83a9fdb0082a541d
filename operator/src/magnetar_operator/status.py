"""A PulsarCluster's status from what was observed and planned: a pure function.

Conditions follow Kubernetes conventions (``type``, ``status``, ``reason``, ``message``,
``lastTransitionTime``, ``observedGeneration``); a condition keeps its
``lastTransitionTime`` while its status does not change. What each condition means is listed
in docs/kubernetes.md; the phase is derived from them:

- ``Failed``: the spec cannot be acted on (InvalidSpec);
- ``Pending``: nothing is running yet (waiting for etcd);
- ``Initializing``: the metadata is not initialised yet, or a role never was ready;
- ``Running``: Ready;
- ``Upgrading``: a change is rolling through a cluster that was running;
- ``Degraded``: a waiting on something broken (a failed decommission, an unreachable admin
  API, a failed init Job) or fewer ready pods than wanted with nothing rolling.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from magnetar_operator.names import (
    broker_service_url,
    broker_web_url,
    service_url,
    service_url_tls,
    web_url,
    web_url_tls,
)
from magnetar_operator.observed import Observed, Workload
from magnetar_operator.rollout import Plan
from magnetar_operator.spec import ClusterSpec

COMPONENT_CONDITIONS = ("BookiesReady", "BrokersReady", "ProxyReady", "AutoRecoveryReady")
Condition = dict[str, Any]


def condition(
    kind: str, status: bool | None, reason: str, message: str, generation: int | None
) -> Condition:
    value = "Unknown" if status is None else ("True" if status else "False")
    found: Condition = {"type": kind, "status": value, "reason": reason, "message": message}
    if generation is not None:
        found["observedGeneration"] = generation
    return found


def merge_conditions(
    previous: Sequence[Mapping[str, Any]], new: Sequence[Condition], now: str
) -> list[Condition]:
    """``new`` with each condition's ``lastTransitionTime`` kept from ``previous`` when its
    status did not change (``now`` otherwise)."""
    before = {c.get("type"): c for c in previous}
    merged = []
    for cond in new:
        old = before.get(cond["type"])
        same = old is not None and old.get("status") == cond["status"]
        since = old.get("lastTransitionTime") if same and old else None
        merged.append({**cond, "lastTransitionTime": since or now})
    return merged


def _counts(workload: Workload | None, wanted: int) -> dict[str, int]:
    if workload is None:
        return {"replicas": wanted, "readyReplicas": 0, "updatedReplicas": 0}
    return {
        "replicas": wanted,
        "readyReplicas": workload.ready,
        "updatedReplicas": workload.updated,
    }


def _component(
    name: str, kind: str, workload: Workload | None, wanted: int, enabled: bool, gen: int | None
) -> Condition:
    if not enabled:
        return condition(kind, True, "Disabled", f"{name} is disabled in the spec", gen)
    if workload is None:
        return condition(kind, False, "NotCreated", f"{name} not created yet", gen)
    ready = workload.observed and workload.ready >= wanted and workload.updated >= wanted
    message = f"{workload.ready}/{wanted} {name} ready, {workload.updated} updated"
    return condition(kind, ready, "AllReady" if ready else "NotReady", message, gen)


def cluster_status(
    spec: ClusterSpec,
    seen: Observed,
    planned: Plan,
    *,
    generation: int | None,
    previous: Mapping[str, Any],
    now: str,
) -> dict[str, Any]:
    """The whole ``status`` of the PulsarCluster."""
    gen = generation
    initialized = seen.init_succeeded or seen.metadata_initialized_before
    conditions = [
        condition(
            "MetadataInitialized",
            initialized,
            "Initialized" if initialized else "NotInitialized",
            "cluster metadata created by the init Job"
            if initialized
            else (seen.init_failed_message or "the init Job has not succeeded yet"),
            gen,
        ),
        _component("bookies", "BookiesReady", seen.bookies, spec.bookies.replicas, True, gen),
        _component("brokers", "BrokersReady", seen.brokers, spec.brokers.replicas, True, gen),
        _component(
            "proxies", "ProxyReady", seen.proxy, spec.proxy.replicas, spec.proxy.enabled, gen
        ),
        _component(
            "autorecovery workers",
            "AutoRecoveryReady",
            seen.autorecovery,
            spec.autorecovery.replicas,
            spec.autorecovery.enabled,
            gen,
        ),
    ]
    wait = planned.wait
    progressing = condition(
        "Progressing",
        wait is not None and not wait.degraded,
        wait.reason if wait else "Reconciled",
        wait.message if wait else "every child matches the spec",
        gen,
    )
    not_ready = [c for c in conditions if c["status"] != "True"]
    degraded_now = wait is not None and wait.degraded
    short = [c for c in not_ready[1:] if c["reason"] == "NotReady"] if wait is None else []
    degraded = condition(
        "Degraded",
        degraded_now or bool(short),
        wait.reason if degraded_now and wait else ("PodsNotReady" if short else "Healthy"),
        wait.message
        if degraded_now and wait
        else ("; ".join(c["message"] for c in short) if short else "no known problem"),
        gen,
    )
    paused = condition(
        "ReconciliationPaused",
        spec.paused,
        "Paused" if spec.paused else "Active",
        "changes to children are paused (annotation or spec.rollout.paused)"
        if spec.paused
        else "the operator applies changes",
        gen,
    )
    ready = not not_ready and wait is None
    ready_message = (
        "every role is ready"
        if ready
        else (wait.message if wait else "; ".join(c["message"] for c in not_ready))
    )
    ready_cond = condition(
        "Ready",
        ready,
        "ClusterReady" if ready else (wait.reason if wait else "NotReady"),
        ready_message,
        gen,
    )
    everything = [ready_cond, *conditions, progressing, degraded, paused]
    was_running = previous.get("phase") in ("Running", "Upgrading", "Degraded")
    if ready:
        phase = "Running"
    elif degraded["status"] == "True":
        phase = "Degraded"
    elif seen.etcd is None and spec.metadata_store.managed and not initialized:
        phase = "Pending"
    elif was_running and initialized:
        phase = "Upgrading"
    else:
        phase = "Initializing"
    status: dict[str, Any] = {
        "phase": phase,
        "conditions": merge_conditions(previous.get("conditions") or [], everything, now),
        "bookies": _counts(seen.bookies, spec.bookies.replicas),
        "brokers": _counts(seen.brokers, spec.brokers.replicas),
        "endpoints": {
            "serviceUrl": service_url(spec),
            "webUrl": web_url(spec),
            "brokerServiceUrl": broker_service_url(spec),
            "brokerWebUrl": broker_web_url(spec),
        },
    }
    if spec.tls.enabled:
        status["endpoints"] |= {
            "serviceUrlTls": service_url_tls(spec),
            "webUrlTls": web_url_tls(spec),
        }
    if spec.metadata_store.managed:
        status["etcd"] = _counts(seen.etcd, spec.metadata_store.etcd.replicas)
    if spec.proxy.enabled:
        status["proxy"] = _counts(seen.proxy, spec.proxy.replicas)
    if spec.autorecovery.enabled:
        status["autorecovery"] = _counts(seen.autorecovery, spec.autorecovery.replicas)
    if seen.last_audit is not None:
        status["lastAudit"] = seen.last_audit
    if generation is not None:
        status["observedGeneration"] = generation
    return status


def invalid_status(
    message: str,
    *,
    generation: int | None,
    previous: Mapping[str, Any],
    now: str,
    reason: str = "InvalidSpec",
) -> dict[str, Any]:
    """The status of a PulsarCluster whose spec (or the Secret it names) cannot be acted on."""
    conds = [
        condition("Ready", False, reason, message, generation),
        condition("Degraded", True, reason, message, generation),
        condition("Progressing", False, reason, "nothing is changed", generation),
    ]
    status: dict[str, Any] = {
        "phase": "Failed",
        "conditions": merge_conditions(previous.get("conditions") or [], conds, now),
    }
    if generation is not None:
        status["observedGeneration"] = generation
    return status
