"""The order of changes to a PulsarCluster's children: a pure planner.

:func:`plan` takes the spec and what was observed and answers what to apply now and, when
something must wait, why. It walks the stages in order and stops at the first that is not
done, so a change reaches each role only after the one before it is healthy:

0. the TLS Certificate (cert-manager): applied on every pass, before anything mounts it.
1. etcd (managed): applied; wait until every member is ready.
2. init: the cluster-init Job created once; wait until it succeeded.
3. bookies: scale-up at once; scale-down one bookie at a time, highest ordinal first, only
   after the admin API says its decommission is ``Done`` (the operator asks for it); a changed
   pod template rolls one bookie at a time through the StatefulSet's ``partition``, moving to
   the next only when every bookie is ready and no ledger is under-replicated.
4. brokers: the Deployment (surge one, drain on stop); wait until rolled out.
5. proxy and autorecovery; wait until rolled out.
6. the audit objects.

While a stage waits, later stages are applied as they were (their current template kept), so
a new image never reaches brokers before the bookies run it. Pure: no I/O, no clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from magnetar_operator.manifests import Obj, Stage, cluster_objects, spec_hash
from magnetar_operator.names import bookie_id
from magnetar_operator.observed import Observed
from magnetar_operator.spec import ClusterSpec


@dataclass(frozen=True)
class Wait:
    """Why the plan stops at a stage: a condition reason and a sentence."""

    reason: str
    message: str
    degraded: bool = False  # waiting on something broken, not on progress


@dataclass
class Plan:
    apply: list[Obj] = field(default_factory=list)
    create: list[Obj] = field(default_factory=list)  # created if missing, never patched (Jobs)
    decommission: list[str] = field(default_factory=list)  # bookie ids to decommission
    wait: Wait | None = None
    held: list[Stage] = field(default_factory=list)  # stages left as they are


def _workload(objects: list[Obj]) -> Obj:
    return next(o for o in objects if o["kind"] in ("StatefulSet", "Deployment"))


def _bookie_step(spec: ClusterSpec, seen: Observed) -> tuple[int, int, Wait | None, list[str]]:
    """The bookie StatefulSet's replicas and partition now, a wait, bookies to decommission."""
    wanted = spec.bookies.replicas
    current = seen.bookies
    if current is None:
        return wanted, 0, Wait("CreatingBookies", "waiting for the bookies to be ready"), []
    replicas = current.replicas
    if wanted < replicas:  # scale down, one bookie at a time
        victim = bookie_id(spec, replicas - 1)
        state = seen.admin.decommissions.get(victim)
        if seen.admin.error is not None and state is None:
            why = f"cannot ask for bookie {victim}'s decommission: {seen.admin.error}"
            return replicas, current.partition, Wait("AdminUnreachable", why, True), []
        if state is None:
            why = f"decommissioning bookie {victim} before removing it"
            return replicas, current.partition, Wait("DecommissioningBookie", why), [victim]
        match state.get("state"):
            case "Done":
                replicas -= 1
            case "Failed":
                why = f"decommission of bookie {victim} failed: {state.get('message', '')}"
                return replicas, current.partition, Wait("DecommissionFailed", why, True), []
            case _:
                left = state.get("ledgersRemaining", "?")
                why = f"waiting for bookie {victim}'s decommission ({left} ledgers to copy)"
                return replicas, current.partition, Wait("DecommissioningBookie", why), []
        if wanted < replicas:
            why = f"bookie {victim} removed; {replicas - wanted} more to decommission"
            return replicas, current.partition, Wait("DecommissioningBookie", why), []
        return replicas, 0, Wait("ScalingBookies", f"scaled the bookies down to {replicas}"), []
    replicas = wanted
    desired_hash = spec_hash(_workload(cluster_objects(spec)[Stage.BOOKIES]))
    if current.spec_hash != desired_hash:  # a new template: start a roll, nothing updated yet
        why = "bookie pod template changed: rolling one bookie at a time"
        return replicas, replicas, Wait("RollingBookies", why), []
    partition = current.partition
    if partition > 0:
        under = seen.admin.under_replicated
        settled = current.observed and current.ready >= current.replicas
        if settled and current.updated >= current.replicas - partition and under == 0:
            partition -= 1
            why = f"updating bookie {partition} (ordinals >= {partition} updated)"
            return replicas, partition, Wait("RollingBookies", why), []
        if under is None:
            why = f"cannot read under-replicated ledgers: {seen.admin.error or 'no answer'}"
        else:
            why = (
                f"waiting for every bookie to be ready and 0 under-replicated ledgers "
                f"(ready {current.ready}/{current.replicas}, under-replicated {under}) "
                f"before updating bookie {partition - 1}"
            )
        return replicas, partition, Wait("RollingBookies", why), []
    if not current.rolled_out(desired_hash) or replicas != current.replicas:
        why = f"waiting for the bookies (ready {current.ready}/{replicas})"
        return replicas, 0, Wait("WaitingForBookies", why), []
    return replicas, 0, None, []


def plan(spec: ClusterSpec, seen: Observed) -> Plan:
    """What to do now; see the module docstring."""
    result = Plan()
    result.apply += cluster_objects(spec)[Stage.SECURITY]
    if spec.metadata_store.managed:
        etcd = cluster_objects(spec)[Stage.ETCD]
        result.apply += etcd
        if seen.etcd is None or not seen.etcd.all_ready:
            ready = 0 if seen.etcd is None else seen.etcd.ready
            why = f"waiting for etcd ({ready}/{spec.metadata_store.etcd.replicas} ready)"
            result.wait = Wait("WaitingForMetadataStore", why)
            return result
    objects = cluster_objects(spec)
    result.create += objects[Stage.INIT]
    if not (seen.init_succeeded or seen.metadata_initialized_before):
        why = "waiting for the cluster-init Job to create the cluster metadata"
        if seen.init_failed_message:
            result.wait = Wait("InitFailed", seen.init_failed_message, True)
        else:
            result.wait = Wait("InitializingMetadata", why)
        return result
    replicas, partition, wait, decommission = _bookie_step(spec, seen)
    objects = cluster_objects(spec, bookie_replicas=replicas, bookie_partition=partition)
    result.apply += objects[Stage.BOOKIES]
    result.decommission += decommission
    if wait is not None:
        result.wait = wait
        _hold_later(result, objects, seen, [Stage.BROKERS, Stage.FRONT])
        return result
    brokers = _workload(objects[Stage.BROKERS])
    result.apply += objects[Stage.BROKERS]
    if seen.brokers is None or not seen.brokers.rolled_out(spec_hash(brokers)):
        ready = 0 if seen.brokers is None else seen.brokers.ready
        why = f"rolling out the brokers ({ready}/{spec.brokers.replicas} ready)"
        result.wait = Wait("WaitingForBrokers", why)
        _hold_later(result, objects, seen, [Stage.FRONT])
        return result
    result.apply += objects[Stage.FRONT]
    for name, workload in (("proxy", seen.proxy), ("autorecovery", seen.autorecovery)):
        wanted = [o for o in objects[Stage.FRONT] if o["metadata"]["name"].endswith(name)]
        deployments = [o for o in wanted if o["kind"] == "Deployment"]
        if deployments and (workload is None or not workload.rolled_out(spec_hash(deployments[0]))):
            reason = "WaitingForProxy" if name == "proxy" else "WaitingForAutoRecovery"
            result.wait = Wait(reason, f"rolling out {name}")
    result.apply += objects[Stage.AUDIT]
    return result


def _hold_later(
    result: Plan, objects: dict[Stage, list[Obj]], seen: Observed, stages: list[Stage]
) -> None:
    """Apply later stages' non-workload objects only when their workload exists; leave the
    workloads themselves unchanged (not created, not rolled)."""
    present = {
        Stage.BROKERS: seen.brokers is not None,
        Stage.FRONT: seen.proxy is not None or seen.autorecovery is not None,
    }
    for stage in stages:
        result.held.append(stage)
        if present.get(stage):
            result.apply += [
                o
                for o in objects[stage]
                if o["kind"] not in ("StatefulSet", "Deployment")
                and o["kind"] != "ConfigMap"  # a ConfigMap change would roll pods early
            ]
