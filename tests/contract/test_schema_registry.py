"""The broker's SchemaRegistry over real metadata stores (memory, and a real etcd): versions, the
strategy from the namespace or the broker default, partitions sharing their topic's history,
consumer rules, deletions, and two brokers adding versions at once (CAS: distinct, consecutive
versions). Each test has its own tenant, so tests share the session's etcd safely."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace

import pytest

from magnetar.broker.errors import ClusterExists
from magnetar.broker.resources import BrokerResources
from magnetar.broker.schemas import SchemaRegistry
from magnetar.metadata import MetadataStore, open_store
from magnetar.naming import NamespaceName, TopicName
from magnetar.policies import ClusterData, TenantInfo
from magnetar.schema import (
    IncompatibleSchema,
    SchemaData,
    SchemaNotFound,
    SchemaType,
    Strategy,
)
from tests.kit.etcd import EtcdServer


def avro(*fields: str, defaults: bool = False) -> SchemaData:
    doc = {
        "type": "record",
        "name": "Order",
        "fields": [
            {"name": f, "type": "string", **({"default": ""} if defaults else {})} for f in fields
        ],
    }
    return SchemaData(SchemaType.AVRO, json.dumps(doc).encode())


@pytest.fixture(params=["memory", "etcd"])
def url(request: pytest.FixtureRequest) -> str:
    if request.param == "memory":
        return f"memory://schemas-{uuid.uuid4().hex}"
    server: EtcdServer = request.getfixturevalue("etcd_server")
    return server.url


@pytest.fixture
def ns() -> NamespaceName:
    return NamespaceName(f"acme-{uuid.uuid4().hex[:8]}", "orders")


@pytest.fixture
def topic(ns: NamespaceName) -> TopicName:
    return ns.topic("in")


@pytest.fixture
async def store(url: str) -> AsyncIterator[MetadataStore]:
    opened = await open_store(url)
    yield opened
    await opened.close()


@pytest.fixture
async def registry(store: MetadataStore, ns: NamespaceName) -> SchemaRegistry:
    resources = BrokerResources(store)
    with contextlib.suppress(ClusterExists):  # etcd is shared by the session's tests
        await resources.create_cluster("standalone", ClusterData("http://127.0.0.1:8080"))
    await resources.create_tenant(ns.tenant, TenantInfo(frozenset(), frozenset({"standalone"})))
    await resources.create_namespace(ns)
    return SchemaRegistry(store, resources, Strategy.FULL)


async def test_versions_and_the_broker_default(registry: SchemaRegistry, topic: TopicName) -> None:
    assert await registry.add(topic, avro("id")) == 0
    assert await registry.add(topic, avro("id")) == 0
    assert await registry.strategy(topic) == Strategy.FULL
    with pytest.raises(IncompatibleSchema):
        await registry.add(topic, avro("id", "sku"))  # FULL: a new field needs a default
    assert await registry.add(topic, avro("id", "sku", defaults=True)) == 1
    latest = await registry.latest(topic)
    assert (latest.version, latest.schema) == (1, avro("id", "sku", defaults=True))


async def test_the_namespace_strategy_wins(
    registry: SchemaRegistry, store: MetadataStore, ns: NamespaceName, topic: TopicName
) -> None:
    resources = BrokerResources(store)
    await resources.set_policies(ns, lambda p: replace(p, schema_compatibility_strategy="FORWARD"))
    await registry.add(topic, avro("id"))
    assert await registry.add(topic, avro("id", "sku")) == 1  # FORWARD allows it
    await resources.set_policies(
        ns, lambda p: replace(p, schema_compatibility_strategy="ALWAYS_COMPATIBLE")
    )
    assert await registry.add(topic, SchemaData(SchemaType.STRING)) == 2


async def test_partitions_share_the_topic_history(
    registry: SchemaRegistry, topic: TopicName
) -> None:
    await registry.add(topic.partition(0), avro("id"))
    assert await registry.add(topic.partition(1), avro("id")) == 0
    assert (await registry.latest(topic)).version == 0


async def test_consumers(registry: SchemaRegistry, topic: TopicName) -> None:
    with pytest.raises(IncompatibleSchema, match="does not have schema"):
        await registry.check_consumer(topic, avro("id"), idle=False)
    await registry.check_consumer(topic, avro("id"), idle=True)  # registers it
    assert (await registry.latest(topic)).version == 0
    await registry.check_consumer(topic, avro("id", "sku", defaults=True), idle=False)
    with pytest.raises(IncompatibleSchema):
        await registry.check_consumer(topic, avro("id", "sku"), idle=False)


async def test_delete_and_force(registry: SchemaRegistry, topic: TopicName) -> None:
    with pytest.raises(SchemaNotFound):
        await registry.delete(topic)
    await registry.add(topic, avro("id"))
    assert await registry.delete(topic) == 1
    with pytest.raises(SchemaNotFound):
        await registry.latest(topic)
    assert await registry.add(topic, SchemaData(SchemaType.STRING)) == 2  # a fresh start
    assert await registry.delete(topic, force=True) is None
    assert (await registry.history(topic)).entries == ()


async def test_two_brokers_add_at_once(
    registry: SchemaRegistry, store: MetadataStore, url: str, topic: TopicName
) -> None:
    other = await open_store(url)  # a second client of the same store: another broker
    try:
        second = SchemaRegistry(other, BrokerResources(other), Strategy.ALWAYS_COMPATIBLE)
        first = SchemaRegistry(store, BrokerResources(store), Strategy.ALWAYS_COMPATIBLE)
        schemas = [avro(f"f{i}") for i in range(8)]
        versions = await asyncio.gather(
            *((first if i % 2 else second).add(topic, s) for i, s in enumerate(schemas))
        )
        assert sorted(versions) == list(range(8))
        history = await registry.history(topic)
        assert [history.version(v).schema for v in versions] == schemas
    finally:
        await other.close()
