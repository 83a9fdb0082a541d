"""BrokerResources against the memory and RocksDB metadata stores: what a user of the admin
API observes (exists / not-found / not-empty errors, CAS-safe concurrent policy updates, state
surviving a reopen of the store)."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from magnetar.broker.errors import (
    ClusterExists,
    ClusterNotFound,
    InvalidPartitionCount,
    InvalidResourceName,
    NamespaceExists,
    NamespaceNotFound,
    PartitionCountNotIncreased,
    PartitionedTopicExists,
    PartitionedTopicNotFound,
    TenantExists,
    TenantNotEmpty,
    TenantNotFound,
    UnknownClusters,
)
from magnetar.broker.resources import BrokerResources
from magnetar.metadata import MetadataStore, open_store
from magnetar.naming import NamespaceName, TopicName
from magnetar.policies import (
    BacklogQuota,
    ClusterData,
    Policies,
    RetentionPolicies,
    TenantInfo,
)

NS = NamespaceName("acme", "orders")


@pytest.fixture(params=["memory", "rocksdb"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "memory":
        return f"memory://resources-{uuid.uuid4().hex}"
    return f"rocksdb://{tmp_path / 'meta'}"


@pytest.fixture
async def store(store_url: str) -> AsyncIterator[MetadataStore]:
    opened = await open_store(store_url)
    yield opened
    await opened.close()


@pytest.fixture
async def res(store: MetadataStore) -> BrokerResources:
    resources = BrokerResources(store)
    await resources.create_cluster("standalone", ClusterData(service_url="http://127.0.0.1:8080"))
    await resources.create_tenant(
        "acme", TenantInfo(frozenset({"admin"}), frozenset({"standalone"}))
    )
    return resources


async def test_clusters_create_get_update_list_delete(res: BrokerResources) -> None:
    assert await res.list_clusters() == ["standalone"]
    with pytest.raises(ClusterExists):
        await res.create_cluster("standalone", ClusterData())
    data = ClusterData(service_url="http://h:1", broker_service_url="pulsar://h:2")
    await res.create_cluster("east", data)
    assert await res.get_cluster("east") == data
    await res.update_cluster("east", replace(data, service_url="http://h:3"))
    assert (await res.get_cluster("east")).service_url == "http://h:3"
    await res.delete_cluster("east")
    with pytest.raises(ClusterNotFound):
        await res.get_cluster("east")
    with pytest.raises(ClusterNotFound):
        await res.update_cluster("east", data)
    with pytest.raises(ClusterNotFound):
        await res.delete_cluster("east")
    with pytest.raises(InvalidResourceName):
        await res.create_cluster("bad/name", data)


async def test_tenants(res: BrokerResources) -> None:
    assert await res.list_tenants() == ["acme"]
    assert await res.get_tenant("acme") == TenantInfo(
        frozenset({"admin"}), frozenset({"standalone"})
    )
    with pytest.raises(TenantExists):
        await res.create_tenant("acme", TenantInfo())
    with pytest.raises(UnknownClusters):
        await res.create_tenant("other", TenantInfo(allowed_clusters=frozenset({"nowhere"})))
    await res.update_tenant("acme", TenantInfo(admin_roles=frozenset({"a", "b"})))
    assert (await res.get_tenant("acme")).admin_roles == {"a", "b"}
    with pytest.raises(TenantNotFound):
        await res.update_tenant("ghost", TenantInfo())
    with pytest.raises(TenantNotFound):
        await res.get_tenant("ghost")
    await res.delete_tenant("acme")
    assert await res.list_tenants() == []
    with pytest.raises(TenantNotFound):
        await res.delete_tenant("acme")


async def test_tenant_with_namespaces_is_not_deleted(res: BrokerResources) -> None:
    await res.create_namespace(NS)
    with pytest.raises(TenantNotEmpty):
        await res.delete_tenant("acme")
    await res.delete_namespace(NS)
    await res.delete_tenant("acme")


async def test_namespace_create_and_delete_race_with_tenant_delete(res: BrokerResources) -> None:
    """Whatever the interleaving, no namespace outlives its tenant."""
    names = [NamespaceName("acme", f"ns{i}") for i in range(8)]

    async def create(ns: NamespaceName) -> None:
        with contextlib.suppress(TenantNotFound):
            await res.create_namespace(ns)

    async def delete() -> None:
        with contextlib.suppress(TenantNotEmpty):
            await res.delete_tenant("acme")

    async with asyncio.timeout(20):
        await asyncio.gather(*(create(ns) for ns in names[:4]), delete(), *map(create, names[4:]))
    if await res.tenant_exists("acme"):
        return
    assert await res.store.list_keys("/admin/namespaces/") == []


async def test_namespaces_and_policies(res: BrokerResources) -> None:
    with pytest.raises(TenantNotFound):
        await res.create_namespace(NamespaceName("ghost", "ns"))
    await res.create_namespace(NS, Policies(message_ttl_in_seconds=60))
    with pytest.raises(NamespaceExists):
        await res.create_namespace(NS)
    await res.create_namespace(NamespaceName("acme", "b"))
    assert await res.list_namespaces("acme") == [NamespaceName("acme", "b"), NS]
    assert (await res.get_policies(NS)).message_ttl_in_seconds == 60
    stored = await res.set_policies(
        NS, lambda p: replace(p, retention_policies=RetentionPolicies(10, 20))
    )
    assert stored.retention_policies == RetentionPolicies(10, 20)
    assert await res.get_policies(NS) == stored
    quota = BacklogQuota(limit_size=1 << 20, policy="producer_exception")
    await res.set_policies(NS, lambda p: p.with_backlog_quota("destination_storage", quota))
    assert (await res.get_policies(NS)).backlog_quota_map == {"destination_storage": quota}
    await res.delete_namespace(NS)
    with pytest.raises(NamespaceNotFound):
        await res.get_policies(NS)
    with pytest.raises(NamespaceNotFound):
        await res.set_policies(NS, lambda p: p)
    with pytest.raises(NamespaceNotFound):
        await res.delete_namespace(NS)
    with pytest.raises(TenantNotFound):
        await res.list_namespaces("ghost")


async def test_concurrent_policy_updates_lose_nothing(res: BrokerResources) -> None:
    """Many tasks each grant one role through set_policies (CAS): every grant survives."""
    await res.create_namespace(NS)

    async def grant(i: int) -> None:
        await res.set_policies(NS, lambda p: p.with_grant(f"role-{i}", frozenset({"produce"})))

    async with asyncio.timeout(20):
        await asyncio.gather(*(grant(i) for i in range(20)))
    grants = (await res.get_policies(NS)).auth_policies.namespace_auth
    assert set(grants) == {f"role-{i}" for i in range(20)}


async def test_concurrent_partition_updates_end_at_the_highest(res: BrokerResources) -> None:
    """Racing update_partitions (CAS, retried): the largest count wins; the others either
    applied before it or are refused as not increasing."""
    await res.create_namespace(NS)
    topic = TopicName.parse("persistent://acme/orders/racy")
    await res.create_partitioned_topic(topic, 1)
    async with asyncio.timeout(20):
        results = await asyncio.gather(
            *(res.update_partitions(topic, n) for n in range(2, 12)), return_exceptions=True
        )
    assert all(r is None or isinstance(r, PartitionCountNotIncreased) for r in results)
    assert await res.get_partitions(topic) == 11


async def test_partitioned_topics(res: BrokerResources) -> None:
    topic = TopicName.parse("persistent://acme/orders/t")
    with pytest.raises(NamespaceNotFound):
        await res.create_partitioned_topic(topic, 3)
    await res.create_namespace(NS)
    assert await res.get_partitions(topic) == 0
    for bad in (0, -1):
        with pytest.raises(InvalidPartitionCount):
            await res.create_partitioned_topic(topic, bad)
    await res.create_partitioned_topic(topic, 3)
    with pytest.raises(PartitionedTopicExists):
        await res.create_partitioned_topic(topic, 3)
    np = TopicName.parse("non-persistent://acme/orders/t")
    await res.create_partitioned_topic(np, 1)
    assert await res.get_partitions(topic) == 3
    assert await res.get_partitions(topic.partition(0)) == 0
    with pytest.raises(PartitionCountNotIncreased):
        await res.update_partitions(topic, 3)
    await res.update_partitions(topic, 5)
    assert await res.get_partitions(topic) == 5
    assert await res.list_partitioned_topics(NS) == sorted([np, topic])
    await res.delete_partitioned_topic(np)
    with pytest.raises(PartitionedTopicNotFound):
        await res.delete_partitioned_topic(np)
    with pytest.raises(PartitionedTopicNotFound):
        await res.update_partitions(np, 2)
    await res.delete_namespace(NS)  # takes the partitioned metadata with it
    assert await res.get_partitions(topic) == 0


async def test_state_survives_reopening_the_store(tmp_path: Path) -> None:
    url = f"rocksdb://{tmp_path / 'meta'}"
    store = await open_store(url)
    res = BrokerResources(store)
    await res.create_cluster("standalone", ClusterData())
    await res.create_tenant("acme", TenantInfo(allowed_clusters=frozenset({"standalone"})))
    await res.create_namespace(NS, Policies(deduplication_enabled=True))
    await res.create_partitioned_topic(TopicName.parse("acme/orders/t"), 4)
    await store.close()
    store = await open_store(url)
    try:
        res = BrokerResources(store)
        assert (await res.get_policies(NS)).deduplication_enabled is True
        assert await res.get_partitions(TopicName.parse("acme/orders/t")) == 4
        assert await res.list_tenants() == ["acme"]
    finally:
        await store.close()
