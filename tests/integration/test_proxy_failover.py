"""Brokers failing behind the proxy (etcd, 2 bookies, 2 brokers, 1 proxy; the official client
knows only the proxy).

- kill -9 of the broker that owns a topic while a producer and a Shared consumer go through the
  proxy: the relays to it end with its sockets, the client looks up again through the proxy,
  the other broker takes the bundle; every message acknowledged to the producer is consumed and
  stored (counted by index; tests/fault/checker.py).
- an admin unload of the bundle: the broker closes the producer over the relay, the client
  looks up again through the proxy and goes on; nothing is lost or reordered.
- a frozen owner (SIGSTOP): its sockets stay open, but its registration vanishes when its lease
  runs out, and the proxy drops the relays to it at once, so the client moves on well before
  its keep-alive would notice.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pulsar
import pytest

from magnetar.broker.bundles import NamespaceBundles
from magnetar.naming import NamespaceName, TopicName
from tests.fault.checker import Subscriber, check_holds, check_in_order, read_stored
from tests.fault.crash import fault_rng
from tests.fault.workload import Publisher
from tests.kit.cluster import Cluster, http, read_all, wait_for

pytestmark = pytest.mark.etcd

NS = NamespaceName("public", "default")
BEFORE = 200
AFTER = 200
ENV = {
    "MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_ENSEMBLE_SIZE": "2",
    "MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_WRITE_QUORUM": "2",
    "MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_ACK_QUORUM": "2",
}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with Cluster(
        tmp_path / "cluster", bookie_count=2, journal_sync=False, broker_env=ENV, proxy=True
    ).running(graceful_stop=False) as running:
        yield running


def fresh(prefix: str) -> str:
    return f"persistent://public/default/{prefix}-{uuid.uuid4().hex[:8]}"


def test_kill_9_of_the_owner_behind_the_proxy_loses_no_acknowledged_message(
    cluster: Cluster,
) -> None:
    seed, rng = fault_rng()
    topic = fresh("proxy-kill")
    client = cluster.proxy_client()
    publisher: Publisher | None = None
    subscriber: Subscriber | None = None
    try:
        client.subscribe(topic, "keep").close()  # holds every entry for the final read
        subscriber = Subscriber(client, topic, "shared", pulsar.ConsumerType.Shared)
        publisher = Publisher(client, topic, "p", batched=False, rng=rng, rate=300)
        publisher.start()
        publisher.wait_acked(BEFORE, timeout_s=30)
        owner = cluster.owner_of(topic)
        owner.kill()
        publisher.wait_acked(publisher.acked_count() + AFTER, timeout_s=60)
        publisher.stop()
        acked = {"p": publisher.acked()}
        subscriber.wait_for(acked, timeout_s=30, seed=seed)
        assert cluster.owner_of(topic) is not owner
        stored = read_stored(client, topic, "keep")
    finally:
        if subscriber is not None:
            subscriber.stop()
        client.close()
    check_holds(stored.get("p", []), acked["p"], "stored/p", seed)
    check_in_order(stored.get("p", []), "stored/p", seed)
    for name, got in subscriber.seen().items():
        check_in_order(got, f"shared/{name}", seed)


def test_an_unload_moves_the_producer_through_the_proxy(cluster: Cluster) -> None:
    topic = fresh("proxy-unload")
    bundle = NamespaceBundles.even(NS).find(TopicName.parse(topic))
    client = cluster.proxy_client()
    try:
        producer = client.create_producer(topic, send_timeout_millis=30_000)
        for i in range(20):
            producer.send(f"m{i}".encode())
        owner = cluster.owner_of(topic)
        unload = f"/admin/v2/namespaces/public/default/{bundle.name}/unload"
        status, body = http(owner, "PUT", unload)
        assert status == 204, body
        for i in range(20, 40):
            producer.send(f"m{i}".encode())
        assert read_all(client, topic, 40) == [f"m{i}".encode() for i in range(40)]
    finally:
        client.close()


def test_relays_to_a_broker_that_leaves_the_registry_are_dropped(cluster: Cluster) -> None:
    topic = fresh("proxy-frozen")
    client = cluster.proxy_client(operation_timeout_s=20)
    try:
        producer = client.create_producer(topic, send_timeout_millis=20_000)
        for i in range(10):
            producer.send(f"a{i}".encode())
        owner = cluster.owner_of(topic)
        proxy_log = cluster.the_proxy.log_text
        owner.pause()
        try:
            wait_for(
                lambda: "proxy_relays_dropped" in proxy_log() and owner.broker_id in proxy_log(),
                "the proxy drops the relays to the frozen broker",
                timeout_s=20,
            )
            # The producer's connection was dropped: it looks up again and reaches the other
            # broker (its keep-alive, 30 s, would not have noticed yet).
            for i in range(10, 20):
                producer.send(f"a{i}".encode())
            survivor = next(b for b in cluster.brokers if b is not owner)
            status, body = http(survivor, "GET", f"/lookup/v2/topic/{topic.replace('://', '/')}")
            assert status == 200, body
            assert body["brokerUrl"] == survivor.service_url
        finally:
            owner.resume()
        got = read_all(client, topic, 20)
        assert got[:10] == [f"a{i}".encode() for i in range(10)]
        assert set(got) == {f"a{i}".encode() for i in range(20)}
    finally:
        client.close()
