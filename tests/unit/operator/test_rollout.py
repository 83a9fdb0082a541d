"""The rollout planner and the status computation: pure, so checked exhaustively here.

Properties: a later stage never gets a new template while an earlier one is not rolled out;
the bookie partition moves down by at most one per pass, and only when every bookie is ready
and no ledger is under-replicated; a bookie is removed only after its decommission is Done.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from magnetar_operator.manifests import Obj, Stage, cluster_objects, spec_hash
from magnetar_operator.names import bookie_id
from magnetar_operator.observed import BookieAdmin, Observed, Workload, last_audit
from magnetar_operator.rollout import plan
from magnetar_operator.spec import ClusterSpec
from magnetar_operator.status import cluster_status

BASE: dict[str, Any] = {"bookies": {"replicas": 3}, "brokers": {"replicas": 2}}


def spec_of(image: str = "magnetar:1", bookies: int = 3) -> ClusterSpec:
    doc = {**BASE, "image": image, "bookies": {"replicas": bookies}}
    return ClusterSpec.parse("c", "ns", doc)


def workload_hash(spec: ClusterSpec, stage: Stage, name: str) -> str:
    (obj,) = [
        o
        for o in cluster_objects(spec)[stage]
        if o["metadata"]["name"] == name and o["kind"] in ("StatefulSet", "Deployment")
    ]
    return spec_hash(obj)


def rolled(spec: ClusterSpec, stage: Stage, name: str, replicas: int) -> Workload:
    return Workload(replicas, replicas, replicas, workload_hash(spec, stage, name))


def healthy(spec: ClusterSpec) -> Observed:
    return Observed(
        etcd=rolled(spec, Stage.ETCD, "c-etcd", 3),
        init_succeeded=True,
        bookies=rolled(spec, Stage.BOOKIES, "c-bookie", spec.bookies.replicas),
        brokers=rolled(spec, Stage.BROKERS, "c-broker", 2),
        proxy=rolled(spec, Stage.FRONT, "c-proxy", 1),
        autorecovery=rolled(spec, Stage.FRONT, "c-autorecovery", 1),
    )


def applied(objects: list[Obj], name: str) -> Obj | None:
    found = [
        o
        for o in objects
        if o["metadata"]["name"] == name
        and o["kind"] != "ConfigMap"
        and o["kind"] in ("StatefulSet", "Deployment")
    ]
    return found[0] if found else None


def test_a_healthy_cluster_has_nothing_to_wait_for_and_is_running() -> None:
    spec = spec_of()
    seen = healthy(spec)
    planned = plan(spec, seen)
    assert planned.wait is None
    status = cluster_status(spec, seen, planned, generation=4, previous={}, now="t")
    assert status["phase"] == "Running"
    assert status["observedGeneration"] == 4
    assert all(
        c["status"] == "True"
        for c in status["conditions"]
        if c["type"] not in ("Progressing", "Degraded", "ReconciliationPaused")
    )


def test_nothing_but_etcd_before_etcd_is_ready() -> None:
    spec = spec_of()
    planned = plan(spec, Observed())
    assert {o["metadata"]["name"] for o in planned.apply} == {"c-etcd"}
    assert planned.create == []
    assert planned.wait is not None
    assert planned.wait.reason == "WaitingForMetadataStore"
    status = cluster_status(spec, Observed(), planned, generation=1, previous={}, now="t")
    assert status["phase"] == "Pending"


def test_a_new_image_starts_the_bookie_roll_and_holds_the_brokers() -> None:
    old, new = spec_of("magnetar:1"), spec_of("magnetar:2")
    planned = plan(new, healthy(old))
    sts = applied(planned.apply, "c-bookie")
    assert sts is not None
    assert sts["spec"]["updateStrategy"]["rollingUpdate"]["partition"] == 3  # nothing yet
    assert applied(planned.apply, "c-broker") is None  # left as it is
    assert planned.wait is not None
    assert planned.wait.reason == "RollingBookies"


def test_lowering_the_partition_waits_for_zero_under_replicated_ledgers() -> None:
    old, new = spec_of("magnetar:1"), spec_of("magnetar:2")
    seen = healthy(old)
    bookies = Workload(3, 3, 1, workload_hash(new, Stage.BOOKIES, "c-bookie"), partition=2)
    waiting = Observed(
        **{**seen.__dict__, "bookies": bookies, "admin": BookieAdmin(under_replicated=4)}
    )
    planned = plan(new, waiting)
    sts = applied(planned.apply, "c-bookie")
    assert sts is not None
    assert sts["spec"]["updateStrategy"]["rollingUpdate"]["partition"] == 2
    assert planned.wait is not None
    assert "under-replicated 4" in planned.wait.message
    clear = Observed(**{**waiting.__dict__, "admin": BookieAdmin(under_replicated=0)})
    sts = applied(plan(new, clear).apply, "c-bookie")
    assert sts is not None
    assert sts["spec"]["updateStrategy"]["rollingUpdate"]["partition"] == 1


def test_scale_down_asks_for_a_decommission_and_removes_only_when_done() -> None:
    spec = spec_of(bookies=2)
    seen = healthy(spec_of(bookies=3))
    victim = bookie_id(spec, 2)
    planned = plan(spec, seen)
    assert planned.decommission == [victim]
    assert applied(planned.apply, "c-bookie")["spec"]["replicas"] == 3  # type: ignore[index]
    in_progress = Observed(
        **{
            **seen.__dict__,
            "admin": BookieAdmin(
                decommissions={victim: {"state": "InProgress", "ledgersRemaining": 3}}
            ),
        }
    )
    planned = plan(spec, in_progress)
    assert planned.decommission == []
    assert planned.wait is not None
    assert "3 ledgers to copy" in planned.wait.message
    done = Observed(
        **{
            **seen.__dict__,
            "admin": BookieAdmin(decommissions={victim: {"state": "Done", "ledgersRemaining": 0}}),
        }
    )
    assert applied(plan(spec, done).apply, "c-bookie")["spec"]["replicas"] == 2  # type: ignore[index]


def test_conditions_keep_their_transition_time_while_unchanged() -> None:
    spec = spec_of()
    seen = healthy(spec)
    first = cluster_status(spec, seen, plan(spec, seen), generation=1, previous={}, now="t1")
    second = cluster_status(spec, seen, plan(spec, seen), generation=1, previous=first, now="t2")
    assert {c["lastTransitionTime"] for c in second["conditions"]} == {"t1"}


@given(
    partition=st.integers(0, 5),
    replicas=st.integers(1, 5),
    ready=st.integers(0, 5),
    updated=st.integers(0, 5),
    under=st.one_of(st.none(), st.integers(0, 3)),
    observed=st.booleans(),
)
def test_the_roll_never_skips_a_bookie_nor_moves_on_unsafely(
    partition: int, replicas: int, ready: int, updated: int, under: int | None, observed: bool
) -> None:
    partition = min(partition, replicas)
    new = spec_of("magnetar:2", bookies=replicas)
    seen = healthy(spec_of("magnetar:1", bookies=replicas))
    bookies = Workload(
        replicas,
        min(ready, replicas),
        min(updated, replicas),
        workload_hash(new, Stage.BOOKIES, "c-bookie"),
        partition,
        observed,
    )
    state = Observed(
        **{**seen.__dict__, "bookies": bookies, "admin": BookieAdmin(under_replicated=under)}
    )
    planned = plan(new, state)
    sts = applied(planned.apply, "c-bookie")
    assert sts is not None
    after = sts["spec"]["updateStrategy"]["rollingUpdate"]["partition"]
    assert after in (partition, partition - 1)
    if after == partition - 1:
        assert under == 0
        assert observed
        assert bookies.ready >= replicas
    broker = applied(planned.apply, "c-broker")
    rolled_out = bookies.rolled_out(workload_hash(new, Stage.BOOKIES, "c-bookie"))
    if broker is not None:  # a broker template is only ever sent once the bookies are done
        assert rolled_out


def test_last_audit_maps_the_spark_application_state() -> None:
    assert last_audit(None, None) is None
    scheduled = {"status": {"lastRunName": "c-audit-1", "lastRun": "2026-01-01T03:00:00Z"}}
    passed = {"status": {"applicationState": {"state": "COMPLETED"}}}
    assert last_audit(scheduled, passed) == {
        "result": "Passed",
        "message": "run c-audit-1: COMPLETED",
        "time": "2026-01-01T03:00:00Z",
    }
    failed = {"status": {"applicationState": {"state": "FAILED", "errorMessage": "3 gaps"}}}
    assert last_audit(scheduled, failed) == {
        "result": "Failed",
        "message": "3 gaps",
        "time": "2026-01-01T03:00:00Z",
    }
    running = last_audit(scheduled, {"status": {"applicationState": {"state": "RUNNING"}}})
    assert running is not None
    assert running["result"] == "Running"
    assert last_audit(scheduled, None) == {
        "result": "Unknown",
        "message": "run c-audit-1: no state yet",
        "time": "2026-01-01T03:00:00Z",
    }
    spec = spec_of()
    seen = Observed(**{**healthy(spec).__dict__, "last_audit": last_audit(scheduled, passed)})
    status = cluster_status(spec, seen, plan(spec, seen), generation=1, previous={}, now="t")
    assert status["lastAudit"]["result"] == "Passed"
