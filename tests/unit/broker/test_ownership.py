"""Bundle ownership and lookup answers, two brokers over one in-memory metadata server."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

from magnetar.broker.broker_registry import (
    BrokerAlreadyRegistered,
    BrokerLookupData,
    BrokerRegistry,
    live_brokers,
)
from magnetar.broker.bundle_factory import NamespaceBundleFactory
from magnetar.broker.bundles import NamespaceBundle, NamespaceBundles
from magnetar.broker.errors import ServiceNotReady
from magnetar.broker.ownership import (
    BundleOwnership,
    LocalOwnership,
    LookupResult,
    proxy_through_service_url,
)
from magnetar.metadata.memory import MemoryMetadataStore
from magnetar.naming import TopicName

TOPIC = TopicName.parse("persistent://public/default/t")


@dataclass
class RecordingTopics:
    closed: list[NamespaceBundle] = field(default_factory=list)

    async def close_bundle_topics(self, bundle: NamespaceBundle) -> int:
        self.closed.append(bundle)
        return 1


@dataclass
class Broker:
    store: MemoryMetadataStore
    registry: BrokerRegistry
    ownership: BundleOwnership
    topics: RecordingTopics


def data(port: int) -> BrokerLookupData:
    return BrokerLookupData(f"127.0.0.1:{port}", f"pulsar://127.0.0.1:{port}", f"http://h:{port}")


async def start_broker(name: str, port: int, session_timeout_s: float = 10.0) -> Broker:
    store = await MemoryMetadataStore.open(name, session_timeout_s=session_timeout_s)
    registry = BrokerRegistry(store, data(port), wait_s=0.2)
    await registry.register()
    topics = RecordingTopics()
    return Broker(
        store,
        registry,
        BundleOwnership(store, registry, topics, NamespaceBundleFactory(store, 4)),
        topics,
    )


@pytest.fixture
async def pair() -> AsyncIterator[tuple[Broker, Broker]]:
    name = uuid.uuid4().hex
    a, b = await start_broker(name, 1, 1.0), await start_broker(name, 2, 1.0)
    yield a, b
    for broker in (a, b):
        await broker.ownership.close()
        await broker.registry.close()
        await broker.store.close()


def other_bundle_topic(owned: NamespaceBundle, ownership: BundleOwnership) -> TopicName:
    for i in range(1000):
        topic = TopicName.parse(f"persistent://public/default/x{i}")
        if NamespaceBundles.even(topic.namespace).find(topic) != owned:
            return topic
    raise AssertionError("no topic outside the bundle")


async def test_first_lookup_acquires_on_the_chosen_broker_and_others_connect_to_it(
    pair: tuple[Broker, Broker],
) -> None:
    a, b = pair
    assert [x.broker_id for x in await live_brokers(a.store)] == ["127.0.0.1:1", "127.0.0.1:2"]
    assert await a.ownership.lookup(TOPIC, False) == LookupResult.connect(a.registry.data)
    a.ownership.check_owned(TOPIC)
    assert await b.ownership.lookup(TOPIC, False) == LookupResult.connect(a.registry.data)
    with pytest.raises(ServiceNotReady, match=r"not served by this instance.*redo the lookup"):
        b.ownership.check_owned(TOPIC)
    assert (await live_brokers(a.store))[0].num_bundles == 1


class SlowPutStore(MemoryMetadataStore):
    """The real memory store, with a network round trip's pause before every put; counts them."""

    puts = 0

    async def put(self, key: str, value: bytes, expected_version: int | None = None) -> int:
        SlowPutStore.puts += 1
        await asyncio.sleep(0.01)
        return await super().put(key, value, expected_version)


async def test_a_burst_of_acquires_publishes_the_final_count_in_few_writes() -> None:
    # Every acquire reports the new bundle count; concurrent compare-and-sets on the registry
    # key used to fail each other, leaving a stale count for the leader until the next report.
    store = await SlowPutStore.open(uuid.uuid4().hex)
    registry = BrokerRegistry(store, data(1), wait_s=0.2)
    await registry.register()
    factory = NamespaceBundleFactory(store, 4)
    ownership = BundleOwnership(store, registry, RecordingTopics(), factory)
    topics: dict[NamespaceBundle, TopicName] = {}
    for i in range(200):
        topic = TopicName.parse(f"persistent://public/default/x{i}")
        topics.setdefault(NamespaceBundles.even(topic.namespace).find(topic), topic)
    SlowPutStore.puts = 0
    try:
        await asyncio.gather(*(ownership.lookup(t, True) for t in topics.values()))
        assert len(ownership.owned) == 4
        assert (await live_brokers(store))[0].num_bundles == 4
        assert SlowPutStore.puts <= 2  # the first acquire's write, then one for the others
    finally:
        await ownership.close()
        await registry.close()
        await store.close()


async def test_unowned_bundle_redirects_to_the_least_loaded_broker(
    pair: tuple[Broker, Broker],
) -> None:
    a, b = pair
    await a.ownership.lookup(TOPIC, False)  # a now owns one bundle, b none
    other = other_bundle_topic(a.ownership.owned[0], a.ownership)
    answer = await a.ownership.lookup(other, False)
    assert answer.redirect
    assert answer.authoritative
    assert answer.pulsar_service_url == b.registry.data.pulsar_service_url
    # The redirected client asks b authoritatively: b takes the bundle, no further redirect.
    assert await b.ownership.lookup(other, True) == LookupResult.connect(b.registry.data)
    b.ownership.check_owned(other)


async def test_concurrent_acquires_leave_one_owner(pair: tuple[Broker, Broker]) -> None:
    a, b = pair
    answers = await asyncio.gather(a.ownership.lookup(TOPIC, True), b.ownership.lookup(TOPIC, True))
    assert answers[0] == answers[1]
    owners = [x for x in (a, b) if x.ownership.owned]
    assert len(owners) == 1


class SlowCheckFactory(NamespaceBundleFactory):
    """The real factory, with a pause in the acquire's boundary check (a slow store)."""

    async def bundle_of(self, bundle: NamespaceBundle) -> bool:
        await asyncio.sleep(0.05)
        return await super().bundle_of(bundle)


async def test_concurrent_lookups_of_an_unowned_bundle_all_connect() -> None:
    # The first lookup's acquire creates the owner key, then checks the boundaries before it
    # records the bundle; the others must wait for it, not read the key as "being unloaded".
    store = await MemoryMetadataStore.open(uuid.uuid4().hex)
    registry = BrokerRegistry(store, data(1), wait_s=0.2)
    await registry.register()
    ownership = BundleOwnership(store, registry, RecordingTopics(), SlowCheckFactory(store, 4))
    try:
        first = asyncio.create_task(ownership.lookup(TOPIC, False))
        await asyncio.sleep(0.02)  # the acquire is inside its boundary check now
        answers = await asyncio.gather(
            first, *(ownership.lookup(TOPIC, authoritative) for authoritative in (False, True))
        )
        assert set(answers) == {LookupResult.connect(registry.data)}
        bundle = ownership.owned[0]
        assert await ownership.owner(bundle) == LookupResult.connect(registry.data)
    finally:
        await ownership.close()
        await registry.close()
        await store.close()


async def test_owner_during_an_acquire_is_its_outcome(pair: tuple[Broker, Broker]) -> None:
    a, _ = pair
    bundle = (await a.ownership.bundles(TOPIC.namespace)).find(TOPIC)
    acquire = asyncio.create_task(a.ownership.lookup(TOPIC, True))
    owners = await asyncio.gather(*(a.ownership.owner(bundle) for _ in range(8)))
    assert await acquire == LookupResult.connect(a.registry.data)
    assert set(owners) == {LookupResult.connect(a.registry.data)}


async def test_unload_closes_topics_then_releases_the_key(pair: tuple[Broker, Broker]) -> None:
    a, b = pair
    await a.ownership.lookup(TOPIC, False)
    bundle = a.ownership.owned[0]
    assert await a.ownership.unload(bundle)
    assert a.topics.closed == [bundle]
    assert await b.ownership.owner(bundle) is None
    with pytest.raises(ServiceNotReady):
        a.ownership.check_owned(TOPIC)
    assert not await b.ownership.unload(bundle)


async def test_session_loss_stops_serving_before_another_broker_can_take_over(
    pair: tuple[Broker, Broker],
) -> None:
    a, b = pair
    await a.ownership.lookup(TOPIC, False)
    bundle = a.ownership.owned[0]
    a.store.suspend_keepalive()  # a hangs: no keep-alive reaches the server
    async with asyncio.timeout(5):
        while await b.ownership.owner(bundle) is not None:  # noqa: ASYNC110 - polls the store
            await asyncio.sleep(0.01)
        # The key is gone: a stopped serving at the latest by now.
        with pytest.raises(ServiceNotReady):
            a.ownership.check_owned(TOPIC)
    assert await b.ownership.lookup(TOPIC, True) == LookupResult.connect(b.registry.data)
    async with asyncio.timeout(5):
        while a.topics.closed != [bundle]:  # noqa: ASYNC110 - the close runs in a's task
            await asyncio.sleep(0.01)
    a.store.resume_keepalive()


async def test_a_second_broker_with_the_same_address_is_refused() -> None:
    name = uuid.uuid4().hex
    first = await start_broker(name, 7)
    store = await MemoryMetadataStore.open(name)
    try:
        twin = BrokerRegistry(store, data(7), wait_s=0.2)
        with pytest.raises(BrokerAlreadyRegistered, match="already registered"):
            await twin.register()
    finally:
        await store.close()
        await first.registry.close()
        await first.store.close()


def test_proxy_through_service_url_follows_pulsar_standalone_rule() -> None:
    assert proxy_through_service_url(True, "pulsar://127.0.0.1:6650")
    assert proxy_through_service_url(True, "pulsar://localhost:6650")
    assert proxy_through_service_url(True, "pulsar://[::1]:6650")
    assert not proxy_through_service_url(True, "pulsar://10.0.0.5:6650")
    assert not proxy_through_service_url(True, "pulsar://broker-0.example:6650")
    assert not proxy_through_service_url(False, "pulsar://127.0.0.1:6650")


async def test_standalone_lookup_carries_the_proxy_through_flag() -> None:
    store = await MemoryMetadataStore.open(uuid.uuid4().hex)
    try:
        factory = NamespaceBundleFactory(store, 4)
        loopback = LocalOwnership(data(1), RecordingTopics(), factory)
        answer = await loopback.lookup(TOPIC, False)
        assert answer.proxy_through_service_url
        assert not answer.redirect
        assert answer.pulsar_service_url == "pulsar://127.0.0.1:1"
        remote = BrokerLookupData("10.0.0.5:1", "pulsar://10.0.0.5:1", "http://10.0.0.5:2")
        assert not (
            await LocalOwnership(remote, RecordingTopics(), factory).lookup(TOPIC, False)
        ).proxy_through_service_url
    finally:
        await store.close()


async def test_cluster_lookup_never_proxies_through(pair: tuple[Broker, Broker]) -> None:
    a, b = pair
    assert not (await a.ownership.lookup(TOPIC, False)).proxy_through_service_url
    assert not (await b.ownership.lookup(TOPIC, False)).proxy_through_service_url
