"""The official client through ``magnetar proxy`` only (etcd, 2 bookies, 2 brokers, 1 proxy).

The client is given the proxy's address and nothing else: every subscription type, a reader,
a partitioned topic, a pattern subscription and seek work as against a broker, with topics
owned by both brokers. The proxy's HTTP port forwards admin calls (topic-scoped ones to the
owner), keeping the brokers' status codes and error bodies, and serves its own ``/metrics``
and health route.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pulsar
import pytest

from magnetar.naming import NamespaceName
from tests.kit.cluster import Cluster, http, one_topic_per_bundle
from tests.kit.scrape import scrape, value

pytestmark = pytest.mark.etcd

RECEIVE_MS = 10_000


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    base: Path = tmp_path_factory.mktemp("proxy")
    env = {
        "MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_ENSEMBLE_SIZE": "2",
        "MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_WRITE_QUORUM": "2",
        "MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_ACK_QUORUM": "2",
    }
    with Cluster(
        base, bookie_count=2, journal_sync=False, broker_env=env, proxy=True
    ).running() as running:
        yield running


@pytest.fixture
def client(cluster: Cluster) -> Iterator[pulsar.Client]:
    c = cluster.proxy_client()
    try:
        yield c
    finally:
        c.close()


def fresh(prefix: str) -> str:
    return f"persistent://public/default/{prefix}-{uuid.uuid4().hex[:8]}"


def produce(client: pulsar.Client, topic: str, count: int, **kwargs: object) -> list[bytes]:
    producer = client.create_producer(topic, **kwargs)  # type: ignore[arg-type]
    sent = [f"m-{i}".encode() for i in range(count)]
    for payload in sent:
        producer.send(payload)
    producer.close()
    return sent


def receive_all(consumer: pulsar.Consumer, count: int) -> list[bytes]:
    got = []
    for _ in range(count):
        msg = consumer.receive(RECEIVE_MS)
        consumer.acknowledge(msg)
        got.append(msg.data())
    return got


@pytest.mark.parametrize(
    "sub_type",
    [
        pulsar.ConsumerType.Exclusive,
        pulsar.ConsumerType.Shared,
        pulsar.ConsumerType.Failover,
        pulsar.ConsumerType.KeyShared,
    ],
)
def test_produce_consume_every_subscription_type(
    client: pulsar.Client, sub_type: pulsar.ConsumerType
) -> None:
    topic = fresh("types")
    consumer = client.subscribe(topic, "sub", consumer_type=sub_type)
    sent = produce(client, topic, 50, batching_enabled=True)
    assert sorted(receive_all(consumer, 50)) == sorted(sent)
    consumer.close()


def test_topics_on_both_brokers_through_the_proxy(cluster: Cluster, client: pulsar.Client) -> None:
    ns = NamespaceName("public", "default")
    topics = one_topic_per_bundle(ns)
    consumers = [client.subscribe(topic, f"both-{uuid.uuid4().hex[:6]}") for topic in topics]
    for topic, consumer in zip(topics, consumers, strict=True):
        sent = produce(client, topic, 10)
        assert receive_all(consumer, 10) == sent
    owners = {cluster.owner_of(t).broker_id for t in topics}
    assert len(owners) == 2, f"every topic on one broker: {owners}"
    # The client reached both owners through relays of the proxy, not by their addresses.
    samples = scrape(cluster.the_proxy.web_url)
    assert value(samples, "pulsar_proxy_active_relays") >= 2
    for consumer in consumers:
        consumer.close()


def test_reader_and_seek(client: pulsar.Client) -> None:
    topic = fresh("reader")
    sent = produce(client, topic, 20)
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    ids = []
    for payload in sent:
        msg = reader.read_next(RECEIVE_MS)
        assert msg.data() == payload
        ids.append(msg.message_id())
    reader.close()
    consumer = client.subscribe(topic, "seeker", initial_position=pulsar.InitialPosition.Earliest)
    assert receive_all(consumer, 20) == sent
    consumer.seek(ids[9])
    msg = consumer.receive(RECEIVE_MS)
    assert msg.data() in (sent[9], sent[10])  # seek is inclusive or exclusive by client
    consumer.close()


def test_partitioned_topic(cluster: Cluster, client: pulsar.Client) -> None:
    name = f"part-{uuid.uuid4().hex[:8]}"
    topic = f"persistent://public/default/{name}"
    status, body = http(
        cluster.the_proxy, "PUT", f"/admin/v2/persistent/public/default/{name}/partitions", 4
    )
    assert status == 204, body
    consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
    sent = produce(client, topic, 40)
    assert sorted(receive_all(consumer, 40)) == sorted(sent)
    consumer.close()
    assert client.get_topic_partitions(topic) == [f"{topic}-partition-{i}" for i in range(4)]


def test_pattern_subscription(client: pulsar.Client) -> None:
    prefix = f"pat-{uuid.uuid4().hex[:6]}"
    topics = [f"persistent://public/default/{prefix}-{i}" for i in range(3)]
    for topic in topics:
        client.create_producer(topic).close()  # the topics exist before the pattern is read
    consumer = client.subscribe(
        re.compile(f"persistent://public/default/{prefix}-.*"),
        "pattern",
        initial_position=pulsar.InitialPosition.Earliest,
    )
    sent = []
    for topic in topics:
        sent += produce(client, topic, 5)
    assert sorted(receive_all(consumer, 15)) == sorted(sent)
    consumer.close()


def test_admin_through_the_proxy_keeps_statuses_and_errors(cluster: Cluster) -> None:
    proxy = cluster.the_proxy
    ns = f"public/proxy-{uuid.uuid4().hex[:6]}"
    assert http(proxy, "PUT", f"/admin/v2/namespaces/{ns}")[0] == 204
    status, body = http(proxy, "PUT", f"/admin/v2/namespaces/{ns}")
    assert status == 409, body
    assert "reason" in body, body
    status, body = http(proxy, "GET", "/admin/v2/namespaces/public")
    assert status == 200
    assert ns in body
    status, body = http(proxy, "GET", "/admin/v2/tenants/no-such-tenant")
    assert status == 404, body
    assert "reason" in body, body
    # A topic-scoped call lands on the owner, whichever broker the proxy asked first.
    topics = one_topic_per_bundle(NamespaceName("public", "default"))
    client = cluster.proxy_client()
    try:
        for topic in topics:
            client.create_producer(topic).close()
    finally:
        client.close()
    for topic in topics:
        path = f"/admin/v2/{topic.replace('://', '/')}"
        status, body = http(proxy, "GET", f"{path}/stats")
        assert status == 200, body
        # A PUT: urllib does not follow its 307, so a 204 shows the proxy followed it.
        owner = cluster.owner_of(topic)
        other = next(b for b in cluster.brokers if b is not owner)
        assert http(other, "PUT", f"{path}/subscription/direct")[0] == 307
        status, body = http(proxy, "PUT", f"{path}/subscription/via-proxy")
        assert status == 204, body
        status, body = http(proxy, "PUT", f"{path}/subscription/via-proxy")
        assert status == 409, body
        assert "reason" in body, body
    status, body = http(proxy, "GET", "/lookup/v2/topic/" + topics[0].replace("://", "/"))
    assert status == 200, body
    assert body["brokerUrl"].startswith("pulsar://"), body


def test_metrics_and_health_of_the_proxy(cluster: Cluster, client: pulsar.Client) -> None:
    topic = fresh("metrics")
    produce(client, topic, 5)
    samples = scrape(cluster.the_proxy.web_url)
    assert value(samples, "pulsar_proxy_new_connections_total") >= 1
    assert value(samples, "pulsar_proxy_binary_bytes_total", direction="client_to_broker") > 0
    assert value(samples, "pulsar_proxy_binary_bytes_total", direction="broker_to_client") > 0
    assert value(samples, "pulsar_proxy_lookup_requests_total", result="connect") >= 1
    assert value(samples, "pulsar_proxy_active_connections") >= 1
    status, body = http(cluster.the_proxy, "GET", "/status.html")
    assert status == 200, body


def test_two_proxies_side_by_side(cluster: Cluster, client: pulsar.Client) -> None:
    """The proxy keeps no state: a second one serves the same topics at once, and stops
    cleanly (exit 0) under its open relays."""
    second = cluster.new_proxy("proxy-2")
    second.start()
    other = pulsar.Client(second.service_url, operation_timeout_seconds=30)
    try:
        topic = fresh("two-proxies")
        consumer = other.subscribe(topic, "sub")
        sent = produce(client, topic, 20)
        assert receive_all(consumer, 20) == sent
        assert second.stop() == 0, second.log_text()[-3000:]  # with the consumer's relay open
        assert "proxy_stopped" in second.log_text()
    finally:
        other.close()
        second.stop()
