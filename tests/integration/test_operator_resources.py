"""Tenant, Namespace and Topic handlers of the real operator (kmock API) against a real
``magnetar standalone`` on loopback: the admin calls, drift reversal, error conditions and
deletion policies are real. The PulsarCluster they reference is written by the test, with its
``status.endpoints`` pointing at the standalone (the cluster handlers are not running here).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from magnetar.client.admin import AdminClient
from magnetar.client.admin_errors import NotFound
from magnetar.policies import ClusterData, PersistencePolicies, RetentionPolicies
from magnetar_operator import annotations as ann
from tests.integration.operator_kit import (
    NAMESPACES,
    PC,
    TENANTS,
    TOPICS,
    resource,
    running_operator,
    wait_ready,
)
from tests.kit.kube_mock import KubeView
from tests.kit.standalone import StandaloneProcess

NS = "team"


@pytest.fixture
async def env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, standalone: StandaloneProcess
) -> AsyncIterator[tuple[KubeView, AdminClient, str]]:
    """The operator (resource handlers only), a view of its API, an admin client of the
    standalone, and a fresh tenant name."""
    async with running_operator(tmp_path, monkeypatch, clusters=False, namespace=NS) as url:
        view = KubeView(url, NS)
        admin = AdminClient(standalone.web_url, timeout_s=10)
        try:
            cluster = resource(
                "PulsarCluster",
                "demo",
                {
                    "clusterName": "standalone",
                    "bookies": {"replicas": 1},
                    "brokers": {"replicas": 1},
                },
            )
            await view.create(*PC, cluster)
            endpoints = {"brokerWebUrl": standalone.web_url, "webUrl": standalone.web_url}
            await view.patch(*PC, "demo", {"status": {"endpoints": endpoints}}, status=True)
            yield view, admin, f"t{uuid.uuid4().hex[:8]}"
        finally:
            await admin.aclose()
            await view.close()


async def test_a_topic_waits_for_its_namespace_then_everything_is_created(
    env: tuple[KubeView, AdminClient, str],
) -> None:
    view, admin, tenant = env
    topic = resource(
        "Topic",
        "orders-in",
        {
            "clusterRef": "demo",
            "namespace": f"{tenant}/orders",
            "name": "incoming",
            "partitions": 4,
        },
    )
    await view.create(*TOPICS, topic)
    cond = await wait_ready(view, TOPICS, "orders-in", "NamespaceNotFound")
    assert f"{tenant}/orders" in cond["message"]

    await view.create(
        *TENANTS, resource("Tenant", tenant, {"clusterRef": "demo", "adminRoles": ["ops"]})
    )
    namespace = {
        "clusterRef": "demo",
        "tenant": tenant,
        "name": "orders",
        "retention": {"timeInMinutes": 60, "sizeInMB": 100},
        "messageTTLSeconds": 3600,
        "deduplication": True,
    }
    await view.create(*NAMESPACES, resource("Namespace", f"{tenant}-orders", namespace))
    await wait_ready(view, TENANTS, tenant)
    await wait_ready(view, NAMESPACES, f"{tenant}-orders")
    await wait_ready(view, TOPICS, "orders-in")  # retried once the namespace exists

    info = await admin.get_tenant(tenant)
    assert info.admin_roles == frozenset({"ops"})
    assert info.allowed_clusters == frozenset({"standalone"})  # the referenced cluster
    assert await admin.get_retention(f"{tenant}/orders") == RetentionPolicies(60, 100)
    assert await admin.get_message_ttl(f"{tenant}/orders") == 3600
    assert await admin.get_deduplication(f"{tenant}/orders") is True
    full = f"persistent://{tenant}/orders/incoming"
    assert (await admin.get_partitioned_topic_metadata(full)).partitions == 4
    obj = await view.get(*TOPICS, "orders-in")
    assert obj is not None
    assert obj["status"]["pulsarName"] == full
    assert obj["status"]["partitions"] == 4
    assert obj["status"]["observedGeneration"] == obj["metadata"]["generation"]
    assert obj["spec"] == topic["spec"]  # never written by the operator

    await view.patch(*TOPICS, "orders-in", {"spec": {"partitions": 6}})

    async def grown() -> bool:
        return (await admin.get_partitioned_topic_metadata(full)).partitions == 6

    await view.wait_for("6 partitions in Pulsar", grown)


async def test_drift_is_reverted(env: tuple[KubeView, AdminClient, str]) -> None:
    view, admin, tenant = env
    await view.create(*TENANTS, resource("Tenant", tenant, {"clusterRef": "demo"}))
    namespace = {
        "clusterRef": "demo",
        "tenant": tenant,
        "name": "ns",
        "retention": {"timeInMinutes": 10, "sizeInMB": 5},
    }
    await view.create(*NAMESPACES, resource("Namespace", "ns", namespace))
    await wait_ready(view, NAMESPACES, "ns")
    await admin.set_retention(f"{tenant}/ns", RetentionPolicies(999, 999))  # someone edits

    async def reverted() -> bool:
        return await admin.get_retention(f"{tenant}/ns") == RetentionPolicies(10, 5)

    await view.wait_for("the retention reverted", reverted)

    async def reported() -> bool:
        events = await view.list("v1", "events")
        return any(
            e["reason"] == "DriftReverted"
            and e["involvedObject"]["name"] == "ns"
            and "retention" in e["message"]
            for e in events
        )

    await view.wait_for("a DriftReverted event", reported)
    await admin.delete_namespace(f"{tenant}/ns")  # deleted behind the operator's back

    async def recreated() -> bool:
        return f"{tenant}/ns" in await admin.list_namespaces(tenant)

    await view.wait_for("the namespace re-created", recreated)


async def test_persistence_and_replication_clusters_applied_refused_and_removed(
    env: tuple[KubeView, AdminClient, str],
) -> None:
    view, admin, tenant = env
    peer = f"peer-{tenant}"
    await admin.create_cluster(peer, ClusterData(service_url="http://127.0.0.1:1"))
    allowed = ["standalone", peer]
    tenant_spec = {"clusterRef": "demo", "allowedClusters": allowed}
    await view.create(*TENANTS, resource("Tenant", tenant, tenant_spec))
    ns = f"{tenant}/geo"
    spec = {
        "clusterRef": "demo",
        "tenant": tenant,
        "name": "geo",
        "persistence": {"ensembleSize": 1, "writeQuorum": 1, "ackQuorum": 1},
        "replicationClusters": allowed,
    }
    await view.create(*NAMESPACES, resource("Namespace", "geo", spec))
    await wait_ready(view, NAMESPACES, "geo")
    assert await admin.get_persistence(ns) == PersistencePolicies(1, 1, 1)
    assert sorted(await admin.get_replication_clusters(ns)) == sorted(allowed)
    await admin.set_persistence(ns, PersistencePolicies(1, 1, 1, 9.0))  # someone edits

    async def reverted() -> bool:
        return await admin.get_persistence(ns) == PersistencePolicies(1, 1, 1)

    await view.wait_for("the persistence reverted", reverted)

    # A cluster Pulsar does not know: its 403 becomes the condition, with an Event; no crash.
    await view.patch(*NAMESPACES, "geo", {"spec": {"replicationClusters": ["nowhere"]}})
    cond = await wait_ready(view, NAMESPACES, "geo", "Forbidden")
    assert "Invalid cluster id: nowhere" in cond["message"]

    async def warned() -> bool:
        events = await view.list("v1", "events")
        return any(
            e["reason"] == "Forbidden" and e["involvedObject"]["name"] == "geo" for e in events
        )

    await view.wait_for("a Forbidden event", warned)
    assert sorted(await admin.get_replication_clusters(ns)) == sorted(allowed)  # unchanged

    # Both fields taken out of the spec: removed in Pulsar (replication: the local cluster).
    await view.patch(
        *NAMESPACES, "geo", {"spec": {"persistence": None, "replicationClusters": None}}
    )

    async def removed() -> bool:
        return await admin.get_persistence(ns) is None and await admin.get_replication_clusters(
            ns
        ) == ["standalone"]

    await view.wait_for("persistence and replication clusters removed", removed)
    await wait_ready(view, NAMESPACES, "geo")


async def test_bad_specs_and_missing_clusters_are_conditions(
    env: tuple[KubeView, AdminClient, str],
) -> None:
    view, _, tenant = env
    bad_name = {"clusterRef": "demo", "tenant": tenant, "name": "has space"}
    await view.create(*NAMESPACES, resource("Namespace", "bad", bad_name))
    cond = await wait_ready(view, NAMESPACES, "bad", "InvalidSpec")
    assert "has space" in cond["message"]
    await view.create(*TENANTS, resource("Tenant", tenant, {"clusterRef": "nowhere"}))
    cond = await wait_ready(view, TENANTS, tenant, "ClusterNotFound")
    assert "nowhere" in cond["message"]
    # the tenant does not exist: the namespace is refused by Pulsar, and says so
    await view.create(
        *NAMESPACES, resource("Namespace", "orphan", {"clusterRef": "demo", "tenant": tenant})
    )
    await wait_ready(view, NAMESPACES, "orphan", "TenantNotFound")


async def test_deletion_policy(env: tuple[KubeView, AdminClient, str]) -> None:
    view, admin, tenant = env
    await admin.create_tenant(tenant)
    await admin.create_namespace(f"{tenant}/n")
    for name, policy in (("gone", "Delete"), ("kept", "Retain")):
        spec = {"clusterRef": "demo", "namespace": f"{tenant}/n", "deletionPolicy": policy}
        await view.create(*TOPICS, resource("Topic", name, spec))
        await wait_ready(view, TOPICS, name)
    topics = await admin.list_topics(f"{tenant}/n")
    assert {f"persistent://{tenant}/n/gone", f"persistent://{tenant}/n/kept"} <= set(topics)

    async def finalizers(name: str) -> list[str]:
        obj = await view.get(*TOPICS, name)
        return list((obj or {}).get("metadata", {}).get("finalizers") or [])

    await view.wait_for(
        "a finalizer on the Delete topic", lambda: _has(finalizers("gone"), ann.FINALIZER)
    )
    assert ann.FINALIZER not in await finalizers("kept")
    for name in ("gone", "kept"):
        await view.delete(*TOPICS, name)

    async def both_gone() -> bool:
        return await view.get(*TOPICS, "gone") is None and await view.get(*TOPICS, "kept") is None

    await view.wait_for("both Topic resources gone", both_gone)
    topics = await admin.list_topics(f"{tenant}/n")
    assert f"persistent://{tenant}/n/gone" not in topics
    assert f"persistent://{tenant}/n/kept" in topics
    with pytest.raises(NotFound):
        await admin.get_stats(f"persistent://{tenant}/n/gone")


async def _has(found: Any, item: str) -> bool:
    return item in await found
