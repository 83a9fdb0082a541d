"""Partitioned topics and the admin REST API on a real ``magnetar standalone``.

A partitioned topic is created through the admin API (port 8080, Pulsar's paths); the OFFICIAL
client then sees its partitions (PARTITIONED_METADATA), produces with round-robin and key-hash
routing, and consumes every message. Topic stats, internal stats, subscription operations and
unload are checked through HTTP against what the client did.
"""

from __future__ import annotations

import urllib.error
import urllib.request
import uuid
from typing import Any

import pulsar
import pytest

from tests.kit.ports import wait_until
from tests.kit.standalone import StandaloneProcess, admin_call

RECEIVE_MS = 5000


def test_partitioned_topic_round_robin_and_key_routing(
    standalone: StandaloneProcess, client: Any
) -> None:
    name = f"parts-{uuid.uuid4().hex[:8]}"
    topic = f"persistent://public/default/{name}"
    admin_call(standalone, "PUT", f"/admin/v2/persistent/public/default/{name}/partitions", 3)
    assert client.get_topic_partitions(topic) == [f"{topic}-partition-{i}" for i in range(3)]
    consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    round_robin = client.create_producer(
        topic,
        batching_enabled=False,
        message_routing_mode=pulsar.PartitionsRoutingMode.RoundRobinDistribution,
    )
    keyed = client.create_producer(
        topic,
        batching_enabled=False,
        message_routing_mode=pulsar.PartitionsRoutingMode.UseSinglePartition,
    )
    ids = [round_robin.send(f"rr{i}".encode()) for i in range(9)]
    assert {i.partition() for i in ids} == {0, 1, 2}
    keyed_ids = [keyed.send(f"k{i}".encode(), partition_key="same-key") for i in range(4)]
    assert len({i.partition() for i in keyed_ids}) == 1
    got = []
    for _ in range(13):
        msg = consumer.receive(timeout_millis=RECEIVE_MS)
        got.append(msg.data())
        consumer.acknowledge(msg)
    assert sorted(got) == sorted([f"rr{i}".encode() for i in range(9)] +
                                 [f"k{i}".encode() for i in range(4)])  # fmt: skip
    base = f"/admin/v2/persistent/public/default/{name}"
    stats = admin_call(standalone, "GET", f"{base}/partitioned-stats")
    assert stats["msgInCounter"] == 13


def test_topic_stats_and_subscription_operations(
    standalone: StandaloneProcess, client: Any
) -> None:
    name = f"stats-{uuid.uuid4().hex[:8]}"
    topic = f"persistent://public/default/{name}"
    base = f"/admin/v2/persistent/public/default/{name}"
    consumer = client.subscribe(topic, "live")
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(5):
        producer.send(f"s{i}".encode())
    stats = admin_call(standalone, "GET", f"{base}/stats")
    assert stats["msgInCounter"] == 5
    assert len(stats["publishers"]) == 1
    assert stats["subscriptions"]["live"]["consumers"][0]["consumerName"]
    internal = admin_call(standalone, "GET", f"{base}/internalStats")
    assert internal["numberOfEntries"] == 5
    assert "live" in internal["cursors"]

    def backlog(sub: str) -> int:
        stats = admin_call(standalone, "GET", f"{base}/stats")
        return int(stats["subscriptions"][sub]["msgBacklog"])

    start = {"ledgerId": -1, "entryId": -1}
    admin_call(standalone, "PUT", f"{base}/subscription/from-start", start)
    assert sorted(admin_call(standalone, "GET", f"{base}/subscriptions")) == ["from-start", "live"]
    assert backlog("from-start") == 5
    admin_call(standalone, "POST", f"{base}/subscription/from-start/skip_all")
    assert backlog("from-start") == 0

    for _ in range(5):
        consumer.acknowledge(consumer.receive(timeout_millis=RECEIVE_MS))
    wait_until(lambda: backlog("live") == 0)
    # Unload: the client reconnects by itself and the topic keeps working.
    admin_call(standalone, "PUT", f"{base}/unload")
    producer.send(b"after-unload")
    assert consumer.receive(timeout_millis=RECEIVE_MS).data() == b"after-unload"
    with pytest.raises(urllib.error.HTTPError) as refused:
        admin_call(standalone, "DELETE", f"{base}/subscription/live")
    assert refused.value.code == 412


def test_lookup_v2_answers_this_broker(standalone: StandaloneProcess) -> None:
    found = admin_call(standalone, "GET", "/lookup/v2/topic/persistent/public/default/anything")
    assert found["brokerUrl"] == standalone.service_url
    assert "brokerUrlTls" not in found  # Pulsar omits the TLS urls when TLS is off
