"""Geo-replication between three named standalones (each a whole cluster with its own
metadata), with the official client: produce in one cluster, consume in the others; a full
mesh without loops; metadata preserved; replicate_to; partitioned topics; clusters added to and
removed from the policy; a remote crash mid-replication and the catch-up (backlog in the stats
and /metrics meanwhile, every message once afterwards); schemas carried to the remote.

The standalones are shared by the module (each test uses its own tenant); the crash test kills
and restarts cluster ``c``. Kill -9 of the replicating broker of a multi-broker cluster is in
tests/integration/test_geo_failover.py.
"""

from __future__ import annotations

import concurrent.futures
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pulsar
import pytest

from tests.kit.geo import cluster_name_args, link_clusters, replicated_namespace, topic_stats
from tests.kit.ports import wait_until
from tests.kit.process import running
from tests.kit.scrape import scrape, value
from tests.kit.standalone import StandaloneProcess, official_client, receive_until_quiet

NAMES = ("a", "b", "c")


@pytest.fixture(scope="module")
def clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, StandaloneProcess]]:
    base: Path = tmp_path_factory.mktemp("geo")
    processes = {
        n: StandaloneProcess(data_dir=base / n, extra_args=cluster_name_args(n)) for n in NAMES
    }
    with running(processes["a"]), running(processes["b"]), running(processes["c"]):
        link_clusters(processes)
        yield processes


@pytest.fixture(scope="module")
def clients(clusters: dict[str, StandaloneProcess]) -> Iterator[dict[str, pulsar.Client]]:
    made = {n: official_client(p) for n, p in clusters.items()}
    yield made
    for client in made.values():
        client.close()


def receive_all(
    client: pulsar.Client,
    topic: str,
    expected: int,
    timeout_s: float = 30.0,
    subscription: str | None = None,
) -> list[pulsar.Message]:
    """What a subscription (a new one from the earliest message by default) gets: at least
    ``expected`` messages (waiting up to ``timeout_s``), then whatever else comes before it is
    quiet (duplicates)."""
    consumer = client.subscribe(
        topic,
        subscription or f"check-{uuid.uuid4().hex[:6]}",
        initial_position=pulsar.InitialPosition.Earliest,
    )
    got: list[pulsar.Message] = []
    deadline = time.monotonic() + timeout_s
    try:
        while len(got) < expected and time.monotonic() < deadline:
            try:
                got.append(consumer.receive(timeout_millis=500))
            except pulsar.Timeout:
                continue
        got += receive_until_quiet(consumer, 500)
    finally:
        consumer.close()
    return got


def examine_first(process: StandaloneProcess, topic: str) -> httpx.Headers:
    path = topic.replace("persistent://", "/admin/v2/persistent/") + "/examinemessage"
    params = {"initialPosition": "earliest", "messagePosition": "1"}
    with httpx.Client(base_url=process.web_url, timeout=10) as http:
        response = http.get(path, params=params)
        response.raise_for_status()
        return response.headers


def test_produce_in_a_consume_in_b_and_c_with_metadata(
    clusters: dict[str, StandaloneProcess], clients: dict[str, pulsar.Client]
) -> None:
    topic = f"persistent://{replicated_namespace(clusters)}/orders"
    producer = clients["a"].create_producer(topic, producer_name="origin-a")
    for i in range(30):
        producer.send_async(
            f"m{i}".encode(),
            None,
            partition_key=f"k{i % 3}",
            properties={"i": str(i)},
            event_timestamp=1_700_000_000_000 + i,
        )
    producer.flush()
    producer.close()
    sent = {m.data(): m for m in receive_all(clients["a"], topic, 30)}
    assert len(sent) == 30
    for remote in ("b", "c"):
        got = receive_all(clients[remote], topic, 30)
        assert sorted(m.data() for m in got) == sorted(sent), remote  # each exactly once
        for message in got:
            origin = sent[message.data()]
            assert message.partition_key() == origin.partition_key()
            assert message.properties() == origin.properties()
            assert message.event_timestamp() == origin.event_timestamp()
            assert message.publish_timestamp() == origin.publish_timestamp()
            assert message.producer_name() == "origin-a"
        headers = examine_first(clusters[remote], topic)
        assert headers["X-Pulsar-replicated-from"] == "a"
        assert headers["X-Pulsar-producer-name"] == "origin-a"
        assert (
            headers["X-Pulsar-sequence-id"]
            == examine_first(clusters["a"], topic)["X-Pulsar-sequence-id"]
        )
    # The replicator cursors are no subscriptions; the stats show them under replication.
    with httpx.Client(base_url=clusters["a"].web_url, timeout=10) as http:
        path = topic.replace("persistent://", "/admin/v2/persistent/")
        subscriptions = http.get(f"{path}/subscriptions").json()
    assert not [s for s in subscriptions if s.startswith("pulsar.repl.")]
    stats = topic_stats(clusters["a"], topic)
    assert set(stats["replication"]) == {"b", "c"}
    wait_until(
        lambda: all(
            r["replicationBacklog"] == 0 and r["connected"]
            for r in topic_stats(clusters["a"], topic)["replication"].values()
        ),
        timeout_s=10,
    )
    inbound = topic_stats(clusters["b"], topic)
    assert inbound["replication"]["a"]["inboundConnection"]
    assert [p["producerName"] for p in inbound["publishers"]] == []


def test_full_mesh_each_cluster_sees_every_message_once(
    clusters: dict[str, StandaloneProcess], clients: dict[str, pulsar.Client]
) -> None:
    topic = f"persistent://{replicated_namespace(clusters)}/mesh"
    per_cluster = 40

    def produce(name: str) -> None:
        producer = clients[name].create_producer(topic, producer_name=f"p-{name}")
        for i in range(per_cluster):
            producer.send_async(f"{name}-{i}".encode(), None)
        producer.flush()
        producer.close()

    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        list(pool.map(produce, NAMES))
    expected = sorted(f"{n}-{i}".encode() for n in NAMES for i in range(per_cluster))
    for name in NAMES:
        got = [m.data() for m in receive_all(clients[name], topic, len(expected))]
        assert sorted(got) == expected, name
        # Per producer, the order of publication survives.
        for origin in NAMES:
            mine = [g for g in got if g.startswith(f"{origin}-".encode())]
            assert mine == [f"{origin}-{i}".encode() for i in range(per_cluster)]


def test_replicate_to_limits_a_message_to_the_clusters_it_names(
    clusters: dict[str, StandaloneProcess], clients: dict[str, pulsar.Client]
) -> None:
    topic = f"persistent://{replicated_namespace(clusters)}/targeted"
    producer = clients["a"].create_producer(topic, batching_enabled=False)
    producer.send(b"only-b", replication_clusters=["b"])
    producer.send(b"everywhere")
    producer.close()
    assert sorted(m.data() for m in receive_all(clients["b"], topic, 2)) == [
        b"everywhere",
        b"only-b",
    ]
    assert [m.data() for m in receive_all(clients["c"], topic, 1)] == [b"everywhere"]


def test_partitioned_topic_is_created_on_the_remote_with_its_partitions(
    clusters: dict[str, StandaloneProcess], clients: dict[str, pulsar.Client]
) -> None:
    ns = replicated_namespace(clusters, replicate_to=["a", "b"])
    topic = f"persistent://{ns}/parts"
    path = f"/admin/v2/persistent/{ns}/parts/partitions"
    with httpx.Client(base_url=clusters["a"].web_url, timeout=10) as http:
        http.put(path, json=3).raise_for_status()
    producer = clients["a"].create_producer(topic, batching_enabled=False)
    for i in range(30):
        producer.send(f"p{i}".encode(), partition_key=f"key-{i}")
    producer.close()

    def remote_partitions() -> Any:
        with httpx.Client(base_url=clusters["b"].web_url, timeout=10) as http:
            response = http.get(path)
            return response.json()["partitions"] if response.status_code == 200 else 0

    wait_until(lambda: remote_partitions() == 3, timeout_s=20)
    got = receive_all(clients["b"], topic, 30)
    assert sorted(m.data() for m in got) == sorted(f"p{i}".encode() for i in range(30))


def test_removing_a_cluster_stops_its_replicator_and_drops_its_cursor(
    clusters: dict[str, StandaloneProcess], clients: dict[str, pulsar.Client]
) -> None:
    ns = replicated_namespace(clusters)
    topic = f"persistent://{ns}/shrink"
    clients["c"].subscribe(topic, "keep", initial_position=pulsar.InitialPosition.Earliest).close()
    producer = clients["a"].create_producer(topic, batching_enabled=False)
    producer.send(b"before")
    wait_until(
        lambda: topic_stats(clusters["a"], topic)["replication"]["c"]["replicationBacklog"] == 0,
        timeout_s=15,
    )
    with httpx.Client(base_url=clusters["a"].web_url, timeout=10) as http:
        http.post(f"/admin/v2/namespaces/{ns}/replication", json=["a", "b"]).raise_for_status()
        internal = topic.replace("persistent://", "/admin/v2/persistent/") + "/internalStats"

        def cursors() -> set[str]:
            return set(http.get(internal).json()["cursors"])

        wait_until(lambda: "pulsar.repl.c" not in cursors(), timeout_s=10)
        assert "pulsar.repl.b" in cursors()
    producer.send(b"after")
    producer.close()
    assert sorted(m.data() for m in receive_all(clients["b"], topic, 2)) == [b"after", b"before"]
    assert [m.data() for m in receive_all(clients["c"], topic, 1, subscription="keep")] == [
        b"before"
    ]


def test_adding_a_cluster_starts_a_replicator_on_the_loaded_topic(
    clusters: dict[str, StandaloneProcess], clients: dict[str, pulsar.Client]
) -> None:
    ns = replicated_namespace(clusters, replicate_to=["a", "b"])
    topic = f"persistent://{ns}/grow"
    clients["c"].subscribe(topic, "keep", initial_position=pulsar.InitialPosition.Earliest).close()
    producer = clients["a"].create_producer(topic, batching_enabled=False)
    producer.send(b"before")
    with httpx.Client(base_url=clusters["a"].web_url, timeout=10) as http:
        http.post(f"/admin/v2/namespaces/{ns}/replication", json=["a", "b", "c"]).raise_for_status()
    # A new replicator starts at the end of the log (replicationStartAt=latest).
    wait_until(lambda: "c" in topic_stats(clusters["a"], topic)["replication"], timeout_s=10)
    producer.send(b"after")
    producer.close()
    got = receive_all(clients["c"], topic, 1, subscription="keep")
    assert [m.data() for m in got] == [b"after"]


def test_remote_crash_grows_the_backlog_then_catches_up_once(
    clusters: dict[str, StandaloneProcess], clients: dict[str, pulsar.Client]
) -> None:
    topic = f"persistent://{replicated_namespace(clusters, replicate_to=['a', 'c'])}/outage"
    # A subscription keeps C's copy (no retention: a topic without one keeps nothing).
    clients["c"].subscribe(topic, "keep", initial_position=pulsar.InitialPosition.Earliest).close()
    producer = clients["a"].create_producer(topic, batching_enabled=False)
    producer.send(b"first")
    wait_until(
        lambda: topic_stats(clusters["a"], topic)["replication"]["c"]["replicationBacklog"] == 0,
        timeout_s=15,
    )
    burst = [f"burst-{i}".encode() for i in range(300)]
    for payload in burst:
        producer.send_async(payload, None)
    producer.flush()
    # A crash while the burst is being replicated: C loses the receipts in flight, A resends
    # them after C's restart and C's recovered deduplication stores them once.
    clusters["c"].kill()
    try:
        for i in range(20):
            producer.send(f"during-{i}".encode())

        def during() -> dict[str, Any]:
            section: dict[str, Any] = topic_stats(clusters["a"], topic)["replication"]["c"]
            return section

        wait_until(lambda: not during()["connected"], timeout_s=15)
        backlog = during()["replicationBacklog"]
        assert backlog >= 20
        assert during()["replicationDelayInSeconds"] >= 0
        samples = scrape(clusters["a"].web_url)
        labels = {"topic": topic, "remote_cluster": "c"}
        assert value(samples, "pulsar_replication_backlog", **labels) == backlog
        assert value(samples, "pulsar_replication_connected_count", **labels) == 0
    finally:
        clusters["c"].start()
    producer.send(b"last")
    producer.close()
    wait_until(
        lambda: topic_stats(clusters["a"], topic)["replication"]["c"]["replicationBacklog"] == 0,
        timeout_s=40,
    )
    expected = sorted([b"first", b"last", *burst, *(f"during-{i}".encode() for i in range(20))])
    client = official_client(clusters["c"])
    try:
        got = sorted(
            m.data() for m in receive_all(client, topic, len(expected), subscription="keep")
        )
    finally:
        client.close()
    assert got == expected  # nothing missing, nothing twice


class OrderV1(pulsar.schema.Record):
    item = pulsar.schema.String()


class OrderV2(pulsar.schema.Record):
    item = pulsar.schema.String()
    note = pulsar.schema.String()


def schema_version(message: pulsar.Message) -> int:
    """The schema version a message names (the official client gives the 8 bytes as str)."""
    raw = message.schema_version()
    return int.from_bytes(raw.encode("latin-1") if isinstance(raw, str) else raw, "big")


def test_a_schema_travels_and_copies_name_the_remote_version(
    clusters: dict[str, StandaloneProcess], clients: dict[str, pulsar.Client]
) -> None:
    ns = replicated_namespace(clusters, replicate_to=["a", "b"])
    topic = f"persistent://{ns}/typed"
    for name in ("a", "b"):  # two unrelated versions on a
        with httpx.Client(base_url=clusters[name].web_url, timeout=10) as http:
            path = f"/admin/v2/namespaces/{ns}/schemaCompatibilityStrategy"
            http.put(path, json="ALWAYS_COMPATIBLE").raise_for_status()
    clients["b"].subscribe(topic, "keep", initial_position=pulsar.InitialPosition.Earliest).close()
    # a: version 0 is OrderV1, version 1 OrderV2; b never saw OrderV1.
    clients["a"].create_producer(topic, schema=pulsar.schema.JsonSchema(OrderV1)).close()
    producer = clients["a"].create_producer(topic, schema=pulsar.schema.JsonSchema(OrderV2))
    producer.send(OrderV2(item="book", note="gift"))
    producer.close()
    got = receive_all(clients["b"], topic, 1, subscription="keep")
    assert len(got) == 1
    with httpx.Client(base_url=clusters["b"].web_url, timeout=10) as http:
        latest = http.get(f"/admin/v2/schemas/{ns}/typed/schema").json()
    assert latest["type"] == "JSON"
    assert '"note"' in latest["data"]  # b holds OrderV2 ...
    assert latest["version"] == 0  # ... as its first version
    original = receive_all(clients["a"], topic, 1)
    assert schema_version(original[0]) == 1  # a's version of OrderV2 ...
    assert schema_version(got[0]) == 0  # ... is b's version 0: the copy names b's
    consumer = clients["b"].subscribe(
        topic,
        "typed",
        schema=pulsar.schema.JsonSchema(OrderV2),
        initial_position=pulsar.InitialPosition.Earliest,
    )
    try:
        value = consumer.receive(timeout_millis=10_000).value()
    finally:
        consumer.close()
    assert (value.item, value.note) == ("book", "gift")
