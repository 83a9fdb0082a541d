"""A namespace's persistence policy (E / Wq / Aq) in a real cluster: one etcd, three bookies,
two brokers, the official ``pulsar-client``.

What a user observes: the admin API's answers (204 when unset, the document back, 412 with
Pulsar's reason for a bad one) and the ledger metadata in etcd (each ledger's ensemble size,
write and ack quorum, and the bookies of its ensemble). The policy shapes the ledgers of a
topic loaded after it was set; a change (through either broker: the owner applies it at once,
the other through its watch on the namespaces) shapes the ledgers created after it, from the
next rollover; removing it brings the broker's defaults (E3 Wq3 Aq2) back.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pulsar
import pytest

from magnetar.ledger.metadata import LedgerMetadataView
from magnetar.metadata import keys
from magnetar.metadata.factory import open_store
from tests.kit.cluster import Cluster, http, wait_for

pytestmark = pytest.mark.etcd

ENV = {
    # Small ledgers: a rollover every 10 entries, at once.
    "MAGNETAR_BROKER_MANAGED_LEDGER_MAX_ENTRIES_PER_LEDGER": "10",
    "MAGNETAR_BROKER_MANAGED_LEDGER_MIN_LEDGER_ROLLOVER_TIME_MINUTES": "0",
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    base = tmp_path_factory.mktemp("persistence")
    with Cluster(base, journal_sync=False, broker_env=ENV).running() as running:
        yield running


def persistence(e: int, w: int, a: int) -> dict[str, Any]:
    return {
        "bookkeeperEnsemble": e,
        "bookkeeperWriteQuorum": w,
        "bookkeeperAckQuorum": a,
        "managedLedgerMaxMarkDeleteRate": 0.0,
    }


def new_namespace(cluster: Cluster) -> str:
    ns = f"public/p{uuid.uuid4().hex[:8]}"
    status, body = http(cluster.brokers[0], "PUT", f"/admin/v2/namespaces/{ns}")
    assert status == 204, body
    return ns


def ledger_shapes(cluster: Cluster, topic: str) -> dict[int, tuple[int, int, int, int]]:
    """The topic's ledgers (internal stats) -> (E, Wq, Aq, bookies of the first ensemble),
    as their metadata in etcd says."""
    status, stats = http(cluster.brokers[0], "GET", f"/admin/v2/{_path(topic)}/internalStats")
    assert status == 200, stats
    ids = [ledger["ledgerId"] for ledger in stats["ledgers"]]

    async def read() -> dict[int, tuple[int, int, int, int]]:
        store = await open_store(cluster.etcd.url)
        try:
            found = {}
            for lid in ids:
                versioned = await store.get(keys.ledger_meta(lid))
                assert versioned is not None, f"ledger {lid} has no metadata"
                meta = LedgerMetadataView.decode(versioned.value)
                first = len(set(meta.ensembles[0][1]))
                found[lid] = (meta.ensemble_size, meta.write_quorum, meta.ack_quorum, first)
            return found
        finally:
            await store.close()

    return asyncio.run(read())


def _path(topic: str) -> str:
    return topic.replace("://", "/")


def newest_ledger_becomes(
    cluster: Cluster, producer: pulsar.Producer, topic: str, shape: tuple[int, int, int, int]
) -> None:
    """Publish in rounds of 10 (one rollover each) until the newest ledger has ``shape``."""

    def newest_has_it() -> bool:
        for i in range(10):
            producer.send(f"m{i}".encode())
        shapes = ledger_shapes(cluster, topic)
        return shapes[max(shapes)] == shape

    wait_for(newest_has_it, f"the newest ledger of {topic} shaped E/Wq/Aq/bookies {shape}")


def test_persistence_shapes_new_ledgers_and_follows_changes(cluster: Cluster) -> None:
    ns = new_namespace(cluster)
    route = f"/admin/v2/namespaces/{ns}/persistence"
    assert http(cluster.brokers[0], "GET", route) == (204, None)
    assert http(cluster.brokers[0], "POST", route, persistence(2, 2, 1))[0] == 204
    assert http(cluster.brokers[1], "GET", route) == (200, persistence(2, 2, 1))

    topic = f"persistent://{ns}/orders"
    client = cluster.client()
    try:
        # A subscription that acks nothing keeps every rolled-over ledger (no retention).
        consumer = client.subscribe(topic, "keep")
        producer = client.create_producer(topic, batching_enabled=False)
        for i in range(25):
            producer.send(f"m{i}".encode())
        shapes = ledger_shapes(cluster, topic)
        assert len(shapes) >= 3  # rolled over
        assert set(shapes.values()) == {(2, 2, 1, 2)}

        # Changed through the broker that does not own the topic: its owner learns it from
        # the namespaces' watch; the ledger being written keeps E2, the next ones have E3.
        owner = cluster.owner_of(topic)
        other = next(b for b in cluster.brokers if b is not owner)
        assert http(other, "POST", route, persistence(3, 3, 3))[0] == 204
        newest_ledger_becomes(cluster, producer, topic, (3, 3, 3, 3))
        assert (2, 2, 1, 2) in ledger_shapes(cluster, topic).values()  # the old ones stay

        # Removed through the owner: the broker's defaults (E3 Wq3 Aq2) again.
        assert http(owner, "DELETE", route)[0] == 204
        assert http(owner, "GET", route) == (204, None)
        newest_ledger_becomes(cluster, producer, topic, (3, 3, 2, 3))
        policies = http(owner, "GET", f"/admin/v2/namespaces/{ns}")[1]
        assert policies["persistence"] is None
        received = 0
        while received < 25:
            consumer.acknowledge(consumer.receive(timeout_millis=10_000))
            received += 1
    finally:
        client.close()


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (persistence(1, 2, 1), "Bookkeeper Ensemble (1) >= WriteQuorum (2) >= AckQuorum (1)"),
        (persistence(3, 2, 3), "Bookkeeper Ensemble (3) >= WriteQuorum (2) >= AckQuorum (3)"),
        (persistence(6, 1, 1), "Bookkeeper-Ensemble must be <= 5 and > 0."),
        (persistence(0, 0, 0), "Bookkeeper-Ensemble must be > 0"),
        ({"bookkeeperEnsemble": 2, "bookkeeperWriteQuorum": 2}, "Bookkeeper-AckQuorum must be > 0"),
        ({**persistence(1, 1, 1), "bookkeeperEnsemble": "two"}, "must be an integer"),
    ],
)
def test_bad_persistence_is_refused_with_412(
    cluster: Cluster, body: dict[str, Any], reason: str
) -> None:
    ns = new_namespace(cluster)
    route = f"/admin/v2/namespaces/{ns}/persistence"
    status, answer = http(cluster.brokers[0], "POST", route, body)
    assert status == 412, answer
    assert reason in answer
    assert http(cluster.brokers[0], "GET", route) == (204, None)  # nothing stored


def test_persistence_of_a_missing_namespace_is_404(cluster: Cluster) -> None:
    route = "/admin/v2/namespaces/public/does-not-exist/persistence"
    assert http(cluster.brokers[0], "GET", route)[0] == 404
    assert http(cluster.brokers[0], "POST", route, persistence(1, 1, 1))[0] == 404
