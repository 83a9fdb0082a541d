"""The real kopf operator against an in-memory Kubernetes API (kmock): a PulsarCluster's life.

The test plays the workload controllers: it marks StatefulSets, Deployments and the init Job
ready by patching their status (with ``observedGeneration``), and it serves the bookie admin
REST contract from a loopback fake (tests/integration/operator_kit.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from magnetar_operator import annotations as ann
from tests.integration.operator_kit import fake_admin, running_operator
from tests.kit.kube_mock import KubeView

# Each test walks a whole cluster life through the operator's retry loop: several passes,
# each a few dozen API calls; on a loaded 2-core machine that is more than the default 120 s.
pytestmark = pytest.mark.timeout(300)

NS = "pulsar"
PC = ("pulsar.magnetar.dev/v1alpha1", "pulsarclusters")
STS = ("apps/v1", "statefulsets")
DEPLOY = ("apps/v1", "deployments")
JOB = ("batch/v1", "jobs")


def cluster(name: str = "demo", **spec: Any) -> dict[str, Any]:
    body = {"bookies": {"replicas": 3}, "brokers": {"replicas": 2}}
    body.update(spec)
    return {
        "apiVersion": "pulsar.magnetar.dev/v1alpha1",
        "kind": "PulsarCluster",
        "metadata": {"name": name, "namespace": NS},
        "spec": body,
    }


async def mark_ready(view: KubeView, kind: tuple[str, str], name: str) -> dict[str, Any]:
    """Play the controller: every pod of ``name`` updated and ready, spec observed."""
    obj = await view.get(*kind, name)
    assert obj is not None, f"{name} does not exist"
    replicas = obj["spec"].get("replicas", 1)
    status = {
        "observedGeneration": obj["metadata"].get("generation", 1),
        "replicas": replicas,
        "readyReplicas": replicas,
        "updatedReplicas": replicas,
        "availableReplicas": replicas,
    }
    await view.patch(*kind, name, {"status": status}, status=True)
    return obj


async def condition(view: KubeView, name: str, kind: str) -> dict[str, Any] | None:
    obj = await view.get(*PC, name)
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond["type"] == kind:
            return dict(cond)
    return None


async def exists(view: KubeView, kind: tuple[str, str], name: str) -> bool:
    return await view.get(*kind, name) is not None


async def bring_up(view: KubeView, name: str = "demo") -> None:
    """Create the cluster and walk it to Ready, checking the order children appear in."""
    await view.create(*PC, cluster(name))
    await view.wait_for("etcd", lambda: exists(view, STS, f"{name}-etcd"))
    assert not await exists(view, JOB, f"{name}-init")  # nothing before etcd is ready
    assert not await exists(view, STS, f"{name}-bookie")
    await mark_ready(view, STS, f"{name}-etcd")
    await view.wait_for("the init Job", lambda: exists(view, JOB, f"{name}-init"))
    assert not await exists(view, STS, f"{name}-bookie")  # metadata first
    await view.patch(*JOB, f"{name}-init", {"status": {"succeeded": 1}}, status=True)
    await view.wait_for("bookies", lambda: exists(view, STS, f"{name}-bookie"))
    assert not await exists(view, DEPLOY, f"{name}-broker")
    await mark_ready(view, STS, f"{name}-bookie")
    await view.wait_for("brokers", lambda: exists(view, DEPLOY, f"{name}-broker"))
    assert not await exists(view, DEPLOY, f"{name}-proxy")
    await mark_ready(view, DEPLOY, f"{name}-broker")
    await view.wait_for("proxy", lambda: exists(view, DEPLOY, f"{name}-proxy"))
    await view.wait_for("autorecovery", lambda: exists(view, DEPLOY, f"{name}-autorecovery"))
    await mark_ready(view, DEPLOY, f"{name}-proxy")
    await mark_ready(view, DEPLOY, f"{name}-autorecovery")


async def is_ready(view: KubeView, name: str = "demo") -> bool:
    cond = await condition(view, name, "Ready")
    return cond is not None and cond["status"] == "True"


async def test_children_appear_in_order_and_the_cluster_becomes_ready(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with running_operator(tmp_path, monkeypatch, resources=False, namespace=NS) as url:
        view = KubeView(url, NS)
        try:
            await bring_up(view)
            await view.wait_for("Ready=True", lambda: is_ready(view))
            obj = await view.get(*PC, "demo")
            assert obj is not None
            status = obj["status"]
            assert status["phase"] == "Running"
            types = {c["type"]: c["status"] for c in status["conditions"]}
            assert types == {
                "Ready": "True",
                "MetadataInitialized": "True",
                "BookiesReady": "True",
                "BrokersReady": "True",
                "ProxyReady": "True",
                "AutoRecoveryReady": "True",
                "Progressing": "False",
                "Degraded": "False",
                "ReconciliationPaused": "False",
            }
            assert status["endpoints"]["serviceUrl"] == "pulsar://demo-proxy.pulsar.svc:6650"
            assert status["bookies"] == {"replicas": 3, "readyReplicas": 3, "updatedReplicas": 3}
            assert status["observedGeneration"] == obj["metadata"]["generation"]
            bookies = await view.get(*STS, "demo-bookie")
            assert bookies is not None
            owner = bookies["metadata"]["ownerReferences"][0]
            assert (owner["kind"], owner["name"]) == ("PulsarCluster", "demo")

            # a bigger volume cannot reach an existing StatefulSet: said, not attempted
            await view.patch(*PC, "demo", {"spec": {"bookies": {"ledgers": {"size": "99Gi"}}}})

            async def warned() -> bool:
                events = await view.list("v1", "events")
                return any(
                    e["reason"] == "ImmutableFieldNotChanged"
                    and "volumeClaimTemplates" in e["message"]
                    for e in events
                )

            await view.wait_for("an ImmutableFieldNotChanged event", warned)
            bookies = await view.get(*STS, "demo-bookie")
            assert bookies is not None
            sizes = {
                c["spec"]["resources"]["requests"]["storage"]
                for c in bookies["spec"]["volumeClaimTemplates"]
            }
            assert sizes == {"10Gi", "50Gi"}
            assert await is_ready(view)  # nothing else to roll
        finally:
            await view.close()


async def spec_hash_of(view: KubeView, kind: tuple[str, str], name: str) -> str:
    obj = await view.get(*kind, name)
    assert obj is not None, name
    return str(obj["spec"]["template"]["metadata"]["annotations"][ann.SPEC_HASH])


async def play_bookie_controller(view: KubeView, name: str) -> dict[str, Any]:
    """Pods with ordinal >= partition run the new template; all ready."""
    sts = await view.get(*STS, name)
    assert sts is not None
    replicas = sts["spec"]["replicas"]
    partition = sts["spec"]["updateStrategy"]["rollingUpdate"]["partition"]
    status = {
        "observedGeneration": sts["metadata"]["generation"],
        "replicas": replicas,
        "readyReplicas": replicas,
        "updatedReplicas": replicas - partition,
    }
    await view.patch(*STS, name, {"status": status}, status=True)
    return sts


async def progressing(view: KubeView) -> str:
    cond = await condition(view, "demo", "Progressing")
    return "" if cond is None else f"{cond['reason']}: {cond['message']}"


async def test_an_image_change_rolls_bookies_one_at_a_time_then_brokers_then_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with (
        fake_admin() as (admin, admin_url),
        running_operator(
            tmp_path, monkeypatch, resources=False, broker_admin_url=admin_url, namespace=NS
        ) as url,
    ):
        view = KubeView(url, NS)
        try:
            await bring_up(view)
            await view.wait_for("Ready=True", lambda: is_ready(view))
            old = {
                n: await spec_hash_of(view, k, n)
                for k, n in (
                    (STS, "demo-bookie"),
                    (DEPLOY, "demo-broker"),
                    (DEPLOY, "demo-proxy"),
                    (DEPLOY, "demo-autorecovery"),
                )
            }
            await view.patch(*PC, "demo", {"spec": {"image": "magnetar:0.2.0"}})

            async def partition_is(p: int) -> bool:
                sts = await view.get(*STS, "demo-bookie")
                assert sts is not None
                rolling = sts["spec"]["updateStrategy"]["rollingUpdate"]["partition"]
                return bool(
                    sts["spec"]["template"]["metadata"]["annotations"][ann.SPEC_HASH]
                    != old["demo-bookie"]
                    and rolling == p
                )

            # the roll starts with no bookie updated, then goes down one ordinal at a time
            await view.wait_for("partition 3", lambda: partition_is(3))
            await play_bookie_controller(view, "demo-bookie")
            await view.wait_for("partition 2", lambda: partition_is(2))
            admin.under_replicated = 5  # bookie 2 restarted: its ledgers are catching up
            await play_bookie_controller(view, "demo-bookie")

            async def waits_for_replication() -> bool:
                return "under-replicated 5" in await progressing(view)

            await view.wait_for("a wait on under-replicated ledgers", waits_for_replication)
            assert await partition_is(2)  # held while ledgers are under-replicated
            assert await spec_hash_of(view, DEPLOY, "demo-broker") == old["demo-broker"]
            admin.under_replicated = 0
            await view.wait_for("partition 1", lambda: partition_is(1))
            await play_bookie_controller(view, "demo-bookie")
            await view.wait_for("partition 0", lambda: partition_is(0))
            assert await spec_hash_of(view, DEPLOY, "demo-broker") == old["demo-broker"]
            await play_bookie_controller(view, "demo-bookie")  # every bookie updated

            async def broker_rolled() -> bool:
                return await spec_hash_of(view, DEPLOY, "demo-broker") != old["demo-broker"]

            await view.wait_for("the brokers' new template", broker_rolled)
            assert await spec_hash_of(view, DEPLOY, "demo-proxy") == old["demo-proxy"]
            phase = (await view.get(*PC, "demo") or {})["status"]["phase"]
            assert phase == "Upgrading"
            await mark_ready(view, DEPLOY, "demo-broker")

            async def front_rolled() -> bool:
                return all(
                    [
                        await spec_hash_of(view, DEPLOY, "demo-proxy") != old["demo-proxy"],
                        await spec_hash_of(view, DEPLOY, "demo-autorecovery")
                        != old["demo-autorecovery"],
                    ]
                )

            await view.wait_for("proxy and autorecovery's new template", front_rolled)
            await mark_ready(view, DEPLOY, "demo-proxy")
            await mark_ready(view, DEPLOY, "demo-autorecovery")
            await view.wait_for("Ready=True after the roll", lambda: is_ready(view))
            broker = await view.get(*DEPLOY, "demo-broker")
            assert broker is not None
            (container,) = broker["spec"]["template"]["spec"]["containers"]
            assert container["image"] == "magnetar:0.2.0"
        finally:
            await view.close()


async def test_bookie_scale_down_waits_for_the_decommission(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with (
        fake_admin() as (admin, admin_url),
        running_operator(
            tmp_path, monkeypatch, resources=False, broker_admin_url=admin_url, namespace=NS
        ) as url,
    ):
        view = KubeView(url, NS)
        try:
            await bring_up(view)
            await view.wait_for("Ready=True", lambda: is_ready(view))
            await view.patch(*PC, "demo", {"spec": {"bookies": {"replicas": 2}}})
            victim = "demo-bookie-2.demo-bookie.pulsar.svc:3181"

            async def asked() -> bool:
                return victim in admin.requests

            await view.wait_for("a decommission request for bookie 2", asked)

            async def says_why() -> bool:
                return "DecommissioningBookie" in await progressing(view) and (
                    "ledgers to copy" in await progressing(view)
                )

            await view.wait_for("the condition to say why it waits", says_why)
            sts = await view.get(*STS, "demo-bookie")
            assert sts is not None
            assert sts["spec"]["replicas"] == 3  # not removed while its ledgers are there

            admin.decommissions[victim]["state"] = "Failed"
            admin.decommissions[victim]["message"] = "no bookie can take ledger 7"

            async def degraded() -> bool:
                cond = await condition(view, "demo", "Degraded")
                return (
                    cond is not None
                    and cond["status"] == "True"
                    and (cond["reason"] == "DecommissionFailed")
                )

            await view.wait_for("Degraded=True for the failed decommission", degraded)
            assert (await view.get(*STS, "demo-bookie") or {})["spec"]["replicas"] == 3

            admin.decommissions[victim].update(state="Done", ledgersRemaining=0, message="")

            async def scaled() -> bool:
                sts = await view.get(*STS, "demo-bookie")
                return sts is not None and sts["spec"]["replicas"] == 2

            await view.wait_for("the StatefulSet at 2 replicas", scaled)
            await mark_ready(view, STS, "demo-bookie")
            await view.wait_for("Ready=True with 2 bookies", lambda: is_ready(view))
            assert admin.requests.count(victim) >= 1
            assert all(r == victim for r in admin.requests)  # only the highest ordinal
        finally:
            await view.close()


async def test_pause_annotation_holds_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with running_operator(tmp_path, monkeypatch, resources=False, namespace=NS) as url:
        view = KubeView(url, NS)
        try:
            await bring_up(view)
            await view.wait_for("Ready=True", lambda: is_ready(view))
            before = await spec_hash_of(view, STS, "demo-bookie")
            await view.patch(
                *PC,
                "demo",
                {
                    "metadata": {"annotations": {ann.PAUSE: "true"}},
                    "spec": {"image": "magnetar:0.3.0"},
                },
            )

            async def paused() -> bool:
                cond = await condition(view, "demo", "ReconciliationPaused")
                return cond is not None and cond["status"] == "True"

            await view.wait_for("ReconciliationPaused=True", paused)
            assert await spec_hash_of(view, STS, "demo-bookie") == before
            await view.patch(*PC, "demo", {"metadata": {"annotations": {ann.PAUSE: None}}})

            async def rolling() -> bool:
                return await spec_hash_of(view, STS, "demo-bookie") != before

            await view.wait_for("the roll to start once unpaused", rolling)
        finally:
            await view.close()


async def test_an_invalid_spec_is_a_condition_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with running_operator(tmp_path, monkeypatch, resources=False, namespace=NS) as url:
        view = KubeView(url, NS)
        try:
            bad = cluster(
                brokers={"replicas": 2, "defaults": {"ensembleSize": 1, "writeQuorum": 2}}
            )
            await view.create(*PC, bad)

            async def refused() -> dict[str, Any] | None:
                cond = await condition(view, "demo", "Ready")
                return cond if cond and cond["reason"] == "InvalidSpec" else None

            cond = await view.wait_for("Ready=False InvalidSpec", refused)
            assert cond["status"] == "False"
            assert "spec.brokers.defaults" in cond["message"]
            assert (await view.get(*PC, "demo") or {})["status"]["phase"] == "Failed"
            assert not await exists(view, STS, "demo-etcd")
            # fixed: the operator picks it up
            fixed = {"defaults": {"writeQuorum": 1, "ackQuorum": 1}}
            await view.patch(*PC, "demo", {"spec": {"brokers": fixed}})
            await view.wait_for("etcd after the fix", lambda: exists(view, STS, "demo-etcd"))
        finally:
            await view.close()


PVC = ("v1", "persistentvolumeclaims")


async def _bookie_claims(view: KubeView, name: str) -> None:
    """What the StatefulSet controller would have created: one claim per template and pod."""
    labels = {
        ann.NAME: "magnetar",
        ann.INSTANCE: name,
        ann.COMPONENT: "bookie",
        ann.MANAGED_BY: ann.OPERATOR,
    }
    for ordinal in range(3):
        for volume in ("journal", "ledgers"):
            claim = {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": f"{volume}-{name}-bookie-{ordinal}", "labels": labels},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            }
            await view.create(*PVC, claim)


@pytest.mark.parametrize("retain", [True, False])
async def test_delete_keeps_bookie_volumes_unless_opted_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, retain: bool
) -> None:
    async with running_operator(tmp_path, monkeypatch, resources=False, namespace=NS) as url:
        view = KubeView(url, NS)
        try:
            spec = {"bookies": {"replicas": 3, "retainVolumesOnDelete": retain}}
            await view.create(*PC, cluster(**spec))
            await view.wait_for("etcd", lambda: exists(view, STS, "demo-etcd"))
            await _bookie_claims(view, "demo")

            async def has_finalizer() -> bool:
                obj = await view.get(*PC, "demo")
                return ann.FINALIZER in ((obj or {}).get("metadata", {}).get("finalizers") or [])

            if not retain:
                await view.wait_for("our finalizer", has_finalizer)
            else:
                await view.wait_for("a status", lambda: condition(view, "demo", "Ready"))
                assert not await has_finalizer()  # nothing to do on delete, nothing to block it
            await view.delete(*PC, "demo")

            async def gone() -> bool:
                return await view.get(*PC, "demo") is None

            await view.wait_for("the PulsarCluster gone", gone)
            claims = [c["metadata"]["name"] for c in await view.list(*PVC)]
            assert len(claims) == (6 if retain else 0)
        finally:
            await view.close()
