"""What the operator observed of a PulsarCluster's world, as plain values (pure).

:class:`Workload` condenses a StatefulSet's or Deployment's spec and status; a workload counts
as *rolled out* only when its controller has seen the latest spec (``observedGeneration``)
and every pod is updated and ready, so a stale status never lets a roll move on.
:class:`BookieAdmin` is what the brokers' admin API said about bookies (None where it did not
answer). Built by the handlers from the Kubernetes and admin reads; read by
:mod:`magnetar_operator.rollout` and :mod:`magnetar_operator.status`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from magnetar_operator.manifests.pod import spec_hash


@dataclass(frozen=True)
class Workload:
    replicas: int  # pods wanted (spec)
    ready: int
    updated: int
    spec_hash: str
    partition: int = 0  # StatefulSet rolling-update partition
    observed: bool = True  # the controller has seen the latest spec

    @classmethod
    def of(cls, obj: Mapping[str, Any] | None) -> Workload | None:
        if obj is None:
            return None
        spec, status = obj.get("spec", {}), obj.get("status") or {}
        generation = obj.get("metadata", {}).get("generation")
        seen = status.get("observedGeneration")
        observed = generation is None or (seen is not None and seen >= generation)
        rolling = (spec.get("updateStrategy") or {}).get("rollingUpdate") or {}
        return cls(
            replicas=int(spec.get("replicas", 1)),
            ready=int(status.get("readyReplicas", 0)),
            updated=int(status.get("updatedReplicas", 0)),
            spec_hash=spec_hash(dict(obj)),
            partition=int(rolling.get("partition", 0)),
            observed=observed,
        )

    @property
    def all_ready(self) -> bool:
        return self.observed and self.ready >= self.replicas

    def rolled_out(self, wanted_hash: str) -> bool:
        """Running ``wanted_hash`` on every pod, all ready."""
        return (
            self.spec_hash == wanted_hash
            and self.observed
            and self.partition == 0
            and self.updated >= self.replicas
            and self.ready >= self.replicas
        )


@dataclass(frozen=True)
class BookieAdmin:
    """The admin API's view of bookies; None fields: no answer."""

    under_replicated: int | None = None
    decommissions: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    error: str | None = None  # why the admin API did not answer


# The spark-operator's application states (SparkApplication status.applicationState.state).
_AUDIT_RESULTS = {
    "COMPLETED": "Passed",  # `magnetar audit` exits 0 only when the audit passed
    "FAILED": "Failed",
    "SUBMISSION_FAILED": "Failed",
    "FAILING": "Failed",
}


def last_audit(
    scheduled: Mapping[str, Any] | None, application: Mapping[str, Any] | None
) -> dict[str, str] | None:
    """``status.lastAudit`` from the ScheduledSparkApplication and its last SparkApplication:
    ``time``, ``result`` (Passed, Failed, Running or Unknown) and ``message``; None before the
    first run."""
    sched = (scheduled or {}).get("status") or {}
    name = sched.get("lastRunName")
    if not name:
        return None
    state = ((application or {}).get("status") or {}).get("applicationState") or {}
    phase = str(state.get("state") or "")
    result = _AUDIT_RESULTS.get(phase, "Running" if phase else "Unknown")
    message = str(state.get("errorMessage") or f"run {name}: {phase or 'no state yet'}")
    found = {"result": result, "message": message}
    if sched.get("lastRun"):
        found["time"] = str(sched["lastRun"])
    return found


@dataclass(frozen=True)
class Observed:
    """Every child the cluster reconcile reads, by stage, plus the admin view."""

    etcd: Workload | None = None
    init_succeeded: bool = False
    init_failed_message: str | None = None
    bookies: Workload | None = None
    brokers: Workload | None = None
    proxy: Workload | None = None
    autorecovery: Workload | None = None
    admin: BookieAdmin = BookieAdmin()
    metadata_initialized_before: bool = False  # the condition, as the status last said
    last_audit: dict[str, str] | None = None
