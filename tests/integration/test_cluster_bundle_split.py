"""Bundle splits across two real brokers (one etcd, three bookies), driven by the official
``pulsar-client`` and ``magnetar admin``.

(a) a namespace created with 2 bundles has them on every broker; ``split-bundle --unload`` sent
    to either broker splits the owner's bundle while a producer publishes: nothing acknowledged
    is lost, and the topics of both halves stay reachable;
(b) automatic split: with ``load_balancer_namespace_bundle_max_topics=5`` (env), 12 topics in one
    bundle make its owner split it until no bundle holds more than 5; every topic stays
    reachable through lookups and keeps its messages;
(c) ``namespaces unload`` on one broker unloads the bundles owned by the other one too.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from magnetar.broker.bundles import NamespaceBundles
from magnetar.cli.main import app
from magnetar.metadata import keys
from magnetar.metadata.factory import open_store
from magnetar.naming import NamespaceName, TopicName
from tests.kit.broker import BrokerProcess
from tests.kit.cluster import Cluster, client_on, http, read_all, topics_in

pytestmark = pytest.mark.etcd

MAX_TOPICS = 5
SPLIT_ENV = {
    "MAGNETAR_BROKER_LOAD_BALANCER_NAMESPACE_BUNDLE_MAX_TOPICS": str(MAX_TOPICS),
    "MAGNETAR_BROKER_LOAD_BALANCER_SPLIT_INTERVAL_MINUTES": "0.01",  # a pass every 0.6 s
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    split = Cluster(tmp_path_factory.mktemp("split"), journal_sync=False, broker_env=SPLIT_ENV)
    with split.running() as running:
        yield running


def admin(broker: BrokerProcess, *args: str) -> str:
    result = CliRunner().invoke(app, ["admin", "--admin-url", broker.web_url, *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def new_namespace(broker: BrokerProcess, bundles: int) -> NamespaceName:
    ns = NamespaceName("public", f"split-{uuid.uuid4().hex[:8]}")
    admin(broker, "namespaces", "create", str(ns), "--bundles", str(bundles))
    return ns


def bundle_names(broker: BrokerProcess, ns: NamespaceName) -> list[str]:
    return admin(broker, "namespaces", "bundles", str(ns)).split()


def test_split_bundle_while_producing_loses_nothing(cluster: Cluster) -> None:
    first, second = cluster.brokers
    ns = new_namespace(first, 2)
    assert bundle_names(second, ns) == [b.name for b in NamespaceBundles.even(ns, 2).bundles]
    whole = NamespaceBundles.even(ns, 2).bundles[0]
    middle = whole.range.lower + (whole.range.upper - whole.range.lower) // 2
    low_topic = topics_in(ns, whole.range.lower, middle, 1)[0]
    high_topic = topics_in(ns, middle, whole.range.upper, 1)[0]
    client = client_on(first, second)
    acked: dict[str, list[bytes]] = {low_topic: [], high_topic: []}
    try:
        producers = {t: client.create_producer(t, send_timeout_millis=30000) for t in acked}
        stop = threading.Event()

        def produce() -> None:
            i = 0
            while not stop.is_set() or i < 100:
                for topic, producer in producers.items():
                    producer.send(f"m{i}".encode())
                    acked[topic].append(f"m{i}".encode())
                i += 1

        worker = threading.Thread(target=produce, daemon=True)
        worker.start()
        deadline = time.monotonic() + 20
        while len(acked[high_topic]) < 20:  # the split happens under way
            assert time.monotonic() < deadline, "the producers never got going"
            time.sleep(0.05)
        for broker in (second, first):  # one of them is not the owner: it answers 307
            admin(broker, "namespaces", "split-bundle", str(ns), "-b", whole.name, "--unload")
            whole = NamespaceBundles.from_json(
                ns, http(first, "GET", f"/admin/v2/namespaces/{ns}/bundles")[1], 4
            ).find(TopicName.parse(low_topic))
        stop.set()
        worker.join(timeout=60)
        assert not worker.is_alive()
        assert len(bundle_names(first, ns)) == 4
        for topic, sent in acked.items():
            got = read_all(client, topic, len(sent), quiet_ms=2000)
            # At least once, in order: a send in flight when the unload closed its producer may
            # be stored and then resent (no deduplication here), right after itself.
            assert [m for i, m in enumerate(got) if i == 0 or m != got[i - 1]] == sent
            path = TopicName.parse(topic).rest_path
            assert http(second, "GET", f"/lookup/v2/topic/{path}")[0] == 200
    finally:
        client.close()


def lookup_settled(broker: BrokerProcess, path: str, timeout_s: float = 15.0) -> int:
    """The status of a lookup once it is not 503, or the 503 after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        status = http(broker, "GET", path)[0]
        if status != 503 or time.monotonic() > deadline:
            return status
        time.sleep(0.2)


def test_a_bundle_over_max_topics_is_split_automatically(cluster: Cluster) -> None:
    first, second = cluster.brokers
    ns = new_namespace(first, 1)
    topics = [f"persistent://{ns}/auto-{i}" for i in range(12)]
    client = client_on(first, second)
    try:
        producers = [client.create_producer(t, send_timeout_millis=30000) for t in topics]
        deadline = time.monotonic() + 40
        while True:
            for i, producer in enumerate(producers):
                producer.send(f"{topics[i]}-{time.monotonic()}".encode())
            bundles = NamespaceBundles.from_json(
                ns, http(second, "GET", f"/admin/v2/namespaces/{ns}/bundles")[1], 4
            )
            per_bundle = [
                sum(b.includes(TopicName.parse(t)) for t in topics) for b in bundles.bundles
            ]
            if max(per_bundle) <= MAX_TOPICS:
                break
            assert time.monotonic() < deadline, f"never split below {MAX_TOPICS}: {per_bundle}"
            time.sleep(0.3)
        assert bundles.count >= 3
        for topic, producer in zip(topics, producers, strict=True):
            producer.send(b"last")
            path = TopicName.parse(topic).rest_path
            # A bundle that is still being split or handed over answers 503 ("redo the
            # lookup", as Pulsar), and clients retry: so does this, for a while.
            assert lookup_settled(first, f"/lookup/v2/topic/{path}") in (200, 307)
            assert read_all(client, topic, 2, quiet_ms=2000)[-1] == b"last"
    finally:
        client.close()


def test_namespace_unload_reaches_every_owner(cluster: Cluster) -> None:
    first, second = cluster.brokers
    ns = new_namespace(first, 4)
    topics = [
        topics_in(ns, b.range.lower, b.range.upper, 1)[0]
        for b in NamespaceBundles.even(ns, 4).bundles
    ]
    for topic, broker in zip(topics, (first, second, first, second), strict=True):
        path = TopicName.parse(topic).rest_path  # each broker takes two of the bundles
        assert http(broker, "GET", f"/lookup/v2/topic/{path}?authoritative=true")[0] == 200
    client = client_on(first, second)
    try:
        for topic in topics:
            client.create_producer(topic).send(b"x")

        async def owners() -> list[str]:
            store = await open_store(cluster.etcd.url)
            try:
                prefix = keys.bundle_owners_prefix(ns.tenant, ns.local_name)
                return [json.loads(v.value)["nativeUrl"] for _, v in await store.list(prefix)]
            finally:
                await store.close()

        assert sorted(asyncio.run(owners())) == sorted([first.service_url, second.service_url] * 2)
        admin(second, "namespaces", "unload", str(ns))
        assert asyncio.run(owners()) == []
    finally:
        client.close()
