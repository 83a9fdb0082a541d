"""Every admin REST v2 and lookup path, over HTTP (httpx), against a REAL ``magnetar standalone``.

Topics are made real by the OFFICIAL client (produce, subscribe); cursor operations (skip,
reset by time and by id, expiry) are checked by consuming and by the stats the broker reports.
Both domains: ``non-persistent://`` topics support create/delete/list/stats/internalStats/
subscriptions/unload, and refuse cursor operations with 405 and a reason. Bad names and bodies
get a 4xx with Pulsar's ``{"reason": ...}`` body.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pulsar
import pytest

from tests.kit.ports import wait_until
from tests.kit.standalone import StandaloneProcess

RECEIVE_MS = 5000
EARLIEST = {"ledgerId": -1, "entryId": -1}


@pytest.fixture(scope="module")
def api(standalone: StandaloneProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=standalone.web_url, timeout=10) as http:
        yield http


def ok(response: httpx.Response, status: int = 204) -> httpx.Response:
    assert response.status_code == status, (response.status_code, response.text)
    return response


def refused(response: httpx.Response, status: int, reason_part: str = "") -> str:
    assert response.status_code == status, (response.status_code, response.text)
    reason = response.json()["reason"]
    assert isinstance(reason, str)
    assert reason
    assert reason_part.lower() in reason.lower(), reason
    return reason


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def backlog(api: httpx.Client, base: str, sub: str) -> int:
    stats = ok(api.get(f"{base}/stats"), 200).json()
    return int(stats["subscriptions"][sub]["msgBacklog"])


def drain(consumer: Any, limit_ms: int = 300) -> list[bytes]:
    got = []
    while True:
        try:
            msg = consumer.receive(timeout_millis=limit_ms)
        except pulsar.Timeout:
            return got
        got.append(msg.data())
        consumer.acknowledge(msg)


# ---------------------------------------------------------------------------- clusters / tenants
def test_clusters(api: httpx.Client, standalone: StandaloneProcess) -> None:
    assert "standalone" in ok(api.get("/admin/v2/clusters"), 200).json()
    data = ok(api.get("/admin/v2/clusters/standalone"), 200).json()
    assert data["brokerServiceUrl"] == standalone.service_url
    name = unique("c")
    body = {"serviceUrl": "http://127.0.0.1:1", "brokerServiceUrl": "pulsar://127.0.0.1:2"}
    ok(api.put(f"/admin/v2/clusters/{name}", json=body))
    refused(api.put(f"/admin/v2/clusters/{name}", json=body), 409)
    ok(api.post(f"/admin/v2/clusters/{name}", json={**body, "serviceUrl": "http://127.0.0.1:3"}))
    assert ok(api.get(f"/admin/v2/clusters/{name}"), 200).json()["serviceUrl"].endswith(":3")
    refused(api.put(f"/admin/v2/clusters/{unique('c')}", json=["not", "an", "object"]), 400)
    ok(api.delete(f"/admin/v2/clusters/{name}"))
    refused(api.get(f"/admin/v2/clusters/{name}"), 404)
    refused(api.delete(f"/admin/v2/clusters/{name}"), 404)


def test_tenants(api: httpx.Client) -> None:
    name = unique("t")
    info = {"adminRoles": ["ops"], "allowedClusters": ["standalone"]}
    ok(api.put(f"/admin/v2/tenants/{name}", json=info))
    refused(api.put(f"/admin/v2/tenants/{name}", json=info), 409)
    assert name in ok(api.get("/admin/v2/tenants"), 200).json()
    assert ok(api.get(f"/admin/v2/tenants/{name}"), 200).json() == info
    ok(api.post(f"/admin/v2/tenants/{name}", json={**info, "adminRoles": ["ops", "dev"]}))
    assert ok(api.get(f"/admin/v2/tenants/{name}"), 200).json()["adminRoles"] == ["dev", "ops"]
    refused(api.put(f"/admin/v2/tenants/{unique('t')}", json={"allowedClusters": ["nowhere"]}), 412)
    refused(api.put(f"/admin/v2/tenants/{unique('t')}", json={"adminRoles": "ops"}), 412)
    refused(api.put("/admin/v2/tenants/bad%20name", json=info), 412)
    ok(api.put(f"/admin/v2/namespaces/{name}/ns"))
    refused(api.delete(f"/admin/v2/tenants/{name}"), 409)
    ok(api.delete(f"/admin/v2/tenants/{name}?force=true"))
    refused(api.get(f"/admin/v2/tenants/{name}"), 404)
    refused(api.delete(f"/admin/v2/tenants/{name}"), 404)


# ---------------------------------------------------------------------------- namespaces
@pytest.fixture
def ns(api: httpx.Client) -> str:
    """A fresh namespace in a fresh tenant."""
    tenant = unique("tn")
    ok(api.put(f"/admin/v2/tenants/{tenant}", json={"allowedClusters": ["standalone"]}))
    ok(api.put(f"/admin/v2/namespaces/{tenant}/ns"))
    return f"{tenant}/ns"


def test_namespaces_create_list_delete(api: httpx.Client, ns: str, client: Any) -> None:
    tenant = ns.split("/")[0]
    assert ok(api.get(f"/admin/v2/namespaces/{tenant}"), 200).json() == [ns]
    refused(api.put(f"/admin/v2/namespaces/{ns}"), 409)
    refused(api.put(f"/admin/v2/namespaces/{unique('ghost')}/ns"), 404)
    refused(api.put(f"/admin/v2/namespaces/{tenant}/bad%20ns"), 412)
    policies = ok(api.get(f"/admin/v2/namespaces/{ns}"), 200).json()
    assert policies["deleted"] is False
    assert "retention_policies" in policies
    client.create_producer(f"persistent://{ns}/t").send(b"x")  # a topic in it
    refused(api.delete(f"/admin/v2/namespaces/{ns}"), 409)
    ok(api.delete(f"/admin/v2/namespaces/{ns}?force=true"))
    assert ok(api.get(f"/admin/v2/namespaces/{tenant}"), 200).json() == []
    refused(api.get(f"/admin/v2/namespaces/{ns}"), 404)
    refused(api.delete(f"/admin/v2/namespaces/{ns}"), 404)


def test_namespace_policies(api: httpx.Client, ns: str) -> None:
    base = f"/admin/v2/namespaces/{ns}"
    # retention
    ok(api.get(f"{base}/retention"))  # not set: 204
    retention = {"retentionTimeInMinutes": 60, "retentionSizeInMB": 100}
    ok(api.post(f"{base}/retention", json=retention))
    assert ok(api.get(f"{base}/retention"), 200).json() == retention
    refused(api.post(f"{base}/retention", json={"retentionTimeInMinutes": -5}), 412)
    refused(api.post(f"{base}/retention", json=[1]), 400)
    ok(api.delete(f"{base}/retention"))
    ok(api.get(f"{base}/retention"))
    # message TTL
    ok(api.post(f"{base}/messageTTL", json=30))
    assert ok(api.get(f"{base}/messageTTL"), 200).json() == 30
    refused(api.post(f"{base}/messageTTL", json=-1), 412)
    refused(api.post(f"{base}/messageTTL", json="soon"), 400)
    ok(api.delete(f"{base}/messageTTL"))
    ok(api.get(f"{base}/messageTTL"))
    # backlog quota
    quota = {"limitSize": 1024, "limitTime": -1, "policy": "consumer_backlog_eviction"}
    ok(api.post(f"{base}/backlogQuota", json=quota))
    got = ok(api.get(f"{base}/backlogQuotaMap"), 200).json()
    assert got == {"destination_storage": quota}
    refused(api.post(f"{base}/backlogQuota", json={**quota, "policy": "explode"}), 412)
    refused(api.post(f"{base}/backlogQuota?backlogQuotaType=nonsense", json=quota), 412)
    ok(api.delete(f"{base}/backlogQuota"))
    assert ok(api.get(f"{base}/backlogQuotaMap"), 200).json() == {}
    # deduplication
    ok(api.post(f"{base}/deduplication", json=True))
    assert ok(api.get(f"{base}/deduplication"), 200).json() is True
    refused(api.post(f"{base}/deduplication", json={"yes": 1}), 400)
    ok(api.delete(f"{base}/deduplication"))
    ok(api.get(f"{base}/deduplication"))
    # auto topic creation
    auto = {"allowAutoTopicCreation": True, "topicType": "partitioned", "defaultNumPartitions": 2}
    ok(api.post(f"{base}/autoTopicCreation", json=auto))
    assert ok(api.get(f"{base}/autoTopicCreation"), 200).json() == auto
    refused(api.post(f"{base}/autoTopicCreation", json={**auto, "defaultNumPartitions": 0}), 412)
    refused(api.post(f"{base}/autoTopicCreation", json={"topicType": "partitioned"}), 412)
    ok(api.delete(f"{base}/autoTopicCreation"))
    ok(api.get(f"{base}/autoTopicCreation"))
    # schema compatibility strategy
    assert ok(api.get(f"{base}/schemaCompatibilityStrategy"), 200).json() == "UNDEFINED"
    ok(api.put(f"{base}/schemaCompatibilityStrategy", json="FULL"))
    assert ok(api.get(f"{base}/schemaCompatibilityStrategy"), 200).json() == "FULL"
    refused(api.put(f"{base}/schemaCompatibilityStrategy", json="WHATEVER"), 412)
    ok(api.delete(f"{base}/schemaCompatibilityStrategy"))
    assert ok(api.get(f"{base}/schemaCompatibilityStrategy"), 200).json() == "UNDEFINED"
    # permissions
    ok(api.post(f"{base}/permissions/app", json=["produce", "consume"]))
    assert ok(api.get(f"{base}/permissions"), 200).json() == {"app": ["consume", "produce"]}
    refused(api.post(f"{base}/permissions/app", json=["fly"]), 412)
    ok(api.delete(f"{base}/permissions/app"))
    assert ok(api.get(f"{base}/permissions"), 200).json() == {}
    # the whole Policies object reflects what is set
    ok(api.post(f"{base}/messageTTL", json=7))
    assert ok(api.get(base), 200).json()["message_ttl_in_seconds"] == 7
    refused(api.get(f"/admin/v2/namespaces/{ns}x/retention"), 404)


# ---------------------------------------------------------------------------- topics, both domains
@pytest.mark.parametrize("domain", ["persistent", "non-persistent"])
def test_non_partitioned_topic_lifecycle(
    api: httpx.Client, ns: str, client: Any, domain: str
) -> None:
    base = f"/admin/v2/{domain}/{ns}"
    ok(api.put(f"{base}/t1"))
    refused(api.put(f"{base}/t1"), 409, "exists")
    refused(api.put(f"{base}/t1/partitions", json=2), 409)  # the name is taken
    assert ok(api.get(base), 200).json() == [f"{domain}://{ns}/t1"]
    assert ok(api.get(f"{base}/t1/partitions"), 200).json() == {"partitions": 0, "deleted": False}
    stats = ok(api.get(f"{base}/t1/stats"), 200).json()
    assert stats["msgInCounter"] == 0
    assert stats["subscriptions"] == {}
    internal = ok(api.get(f"{base}/t1/internalStats"), 200).json()
    assert internal["entriesAddedCounter"] == 0
    assert internal["cursors"] == {}
    # a producer makes it busy
    producer = client.create_producer(f"{domain}://{ns}/t1")
    refused(api.delete(f"{base}/t1"), 412)
    producer.close()
    ok(api.delete(f"{base}/t1"))
    refused(api.delete(f"{base}/t1"), 404)
    refused(api.get(f"{base}/t1/stats"), 404)
    assert ok(api.get(base), 200).json() == []
    # force deletes a topic with a connected consumer
    consumer = client.subscribe(f"{domain}://{ns}/t2", "s")
    ok(api.delete(f"{base}/t2?force=true"))
    consumer.close()
    refused(api.get(f"/admin/v2/{domain}/{ns}x"), 404)
    refused(api.put(f"/admin/v2/{domain}/{unique('ghost')}/ns/t"), 404)
    refused(api.put(f"/admin/v2/{domain}/{ns}x/t"), 404, "namespace")
    refused(api.put(f"/admin/v2/{domain}/{ns.split('/')[0]}/bad%20ns/t"), 412)


@pytest.mark.parametrize("domain", ["persistent", "non-persistent"])
def test_partitioned_topic_lifecycle(api: httpx.Client, ns: str, client: Any, domain: str) -> None:
    base = f"/admin/v2/{domain}/{ns}"
    topic = f"{domain}://{ns}/pt"
    ok(api.put(f"{base}/pt/partitions", json=2))
    refused(api.put(f"{base}/pt/partitions", json=2), 409)
    refused(api.put(f"{base}/pt"), 409)  # the name is taken by the partitioned topic
    assert ok(api.get(f"{base}/pt/partitions"), 200).json() == {"partitions": 2, "deleted": False}
    assert ok(api.get(f"{base}/partitioned"), 200).json() == [topic]
    refused(api.put(f"{base}/zero/partitions", json=0), 406)
    refused(api.put(f"{base}/junk/partitions", json="many"), 400)
    consumer = client.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
    producer = client.create_producer(
        topic,
        batching_enabled=False,
        message_routing_mode=pulsar.PartitionsRoutingMode.RoundRobinDistribution,
    )
    for i in range(6):
        producer.send(f"m{i}".encode())
    assert sorted(drain(consumer, 1000)) == [f"m{i}".encode() for i in range(6)]
    agg = ok(api.get(f"{base}/pt/partitioned-stats"), 200).json()
    assert agg["metadata"] == {"partitions": 2}
    assert agg["msgInCounter"] == 6
    assert set(agg["partitions"]) == {f"{topic}-partition-{i}" for i in range(2)}
    assert (
        ok(api.get(f"{base}/pt/partitioned-stats?perPartition=false"), 200).json()["partitions"]
        == {}
    )
    one = ok(api.get(f"{base}/pt-partition-1/stats"), 200).json()
    assert one["msgInCounter"] == 3
    assert ok(api.get(f"{base}/pt/subscriptions"), 200).json() == ["s"]
    # grow: the client sees the new partition count
    refused(api.post(f"{base}/pt/partitions", json=1), 422)
    ok(api.post(f"{base}/pt/partitions", json=3))
    assert ok(api.get(f"{base}/pt/partitions"), 200).json()["partitions"] == 3
    assert client.get_topic_partitions(topic) == [f"{topic}-partition-{i}" for i in range(3)]
    refused(api.get(f"{base}/t-none/partitioned-stats"), 404)
    producer.close()
    consumer.close()
    ok(api.delete(f"{base}/pt/partitions?force=true"))
    assert ok(api.get(f"{base}/partitioned"), 200).json() == []
    assert ok(api.get(f"{base}/pt/partitions"), 200).json()["partitions"] == 0
    refused(api.delete(f"{base}/pt/partitions"), 404)


def test_partitions_check_allow_auto_creation(api: httpx.Client, ns: str) -> None:
    base = f"/admin/v2/persistent/{ns}"
    # No namespace override: the broker's setting (allowAutoTopicCreationType=non-partitioned).
    got = ok(api.get(f"{base}/a1/partitions?checkAllowAutoCreation=true"), 200).json()
    assert got["partitions"] == 0
    assert ok(api.get(f"{base}/partitioned"), 200).json() == []
    # A namespace override to partitioned topics wins.
    auto = {"allowAutoTopicCreation": True, "topicType": "partitioned", "defaultNumPartitions": 3}
    ok(api.post(f"/admin/v2/namespaces/{ns}/autoTopicCreation", json=auto))
    got = ok(api.get(f"{base}/a2/partitions?checkAllowAutoCreation=false"), 200).json()
    assert got["partitions"] == 0
    got = ok(api.get(f"{base}/a2/partitions?checkAllowAutoCreation=true"), 200).json()
    assert got["partitions"] == 3
    assert ok(api.get(f"{base}/partitioned"), 200).json() == [f"persistent://{ns}/a2"]
    assert len(ok(api.get(base), 200).json()) == 3  # its partitions exist
    # An existing non-partitioned topic of the name is not turned into a partitioned one.
    ok(api.put(f"{base}/plain"))
    got = ok(api.get(f"{base}/plain/partitions?checkAllowAutoCreation=true"), 200).json()
    assert got["partitions"] == 0
    # ... and so does one that forbids auto-creation.
    ok(api.post(f"/admin/v2/namespaces/{ns}/autoTopicCreation", json={
        "allowAutoTopicCreation": False}))  # fmt: skip
    got = ok(api.get(f"{base}/a3/partitions?checkAllowAutoCreation=true"), 200).json()
    assert got["partitions"] == 0


def test_persistent_subscriptions_and_cursor_operations(
    api: httpx.Client, ns: str, client: Any
) -> None:
    topic = f"persistent://{ns}/cur"
    base = f"/admin/v2/persistent/{ns}/cur"
    producer = client.create_producer(topic, batching_enabled=False)
    ids = [producer.send(f"m{i}".encode()) for i in range(6)]
    # create: at the end (no body) and at the start
    ok(api.put(f"{base}/subscription/late"))
    ok(api.put(f"{base}/subscription/early", json=EARLIEST))
    refused(api.put(f"{base}/subscription/early"), 409)
    refused(api.put(f"{base}/subscription/bad", json={"ledgerId": "x"}), 400)
    assert ok(api.get(f"{base}/subscriptions"), 200).json() == ["early", "late"]
    assert backlog(api, base, "late") == 0
    assert backlog(api, base, "early") == 6
    # skip 2: the consumer starts at m2
    ok(api.post(f"{base}/subscription/early/skip/2"))
    assert backlog(api, base, "early") == 4
    refused(api.post(f"{base}/subscription/nope/skip/1"), 404)
    consumer = client.subscribe(topic, "early")
    assert consumer.receive(timeout_millis=RECEIVE_MS).data() == b"m2"
    consumer.close()
    # reset to a message id: the entry itself is the next one
    reset = {"ledgerId": ids[4].ledger_id(), "entryId": ids[4].entry_id()}
    ok(api.post(f"{base}/subscription/early/resetcursor", json=reset))
    assert backlog(api, base, "early") == 2
    refused(api.post(f"{base}/subscription/early/resetcursor", json={"entryId": 1}), 400)
    consumer = client.subscribe(topic, "early")
    assert drain(consumer) == [b"m4", b"m5"]
    consumer.close()
    # reset by time: 0 is before everything
    ok(api.post(f"{base}/subscription/early/resetcursor/0"))
    assert backlog(api, base, "early") == 6
    consumer = client.subscribe(topic, "early")
    first = consumer.receive(timeout_millis=RECEIVE_MS)
    assert first.data() == b"m0"
    consumer.close()
    # reset by a publish time: that message is the next
    ok(api.post(f"{base}/subscription/early/resetcursor/{int(time.time() * 1000) + 60_000}"))
    assert backlog(api, base, "early") == 0
    # skip_all
    ok(api.post(f"{base}/subscription/late/resetcursor/0"))
    assert backlog(api, base, "late") == 6
    ok(api.post(f"{base}/subscription/late/skip_all"))
    assert backlog(api, base, "late") == 0
    # a reset disconnects a live consumer, which resubscribes and reads from the new position
    live = client.subscribe(topic, "live", initial_position=pulsar.InitialPosition.Earliest)
    assert len(drain(live)) == 6
    ok(api.post(f"{base}/subscription/live/resetcursor/0"))
    wait_until(lambda: backlog(api, base, "live") == 6)
    assert len(drain(live, 2000)) == 6
    # delete: busy while a consumer is connected, unless forced
    refused(api.delete(f"{base}/subscription/live"), 412)
    ok(api.delete(f"{base}/subscription/live?force=true"))
    live.close()
    ok(api.delete(f"{base}/subscription/late"))
    refused(api.delete(f"{base}/subscription/late"), 404)
    assert ok(api.get(f"{base}/subscriptions"), 200).json() == ["early"]
    producer.close()


def test_persistent_expire_messages(api: httpx.Client, ns: str, client: Any) -> None:
    topic = f"persistent://{ns}/exp"
    base = f"/admin/v2/persistent/{ns}/exp"
    ok(api.put(f"{base}/subscription/a", json=EARLIEST))
    ok(api.put(f"{base}/subscription/b", json=EARLIEST))
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(3):
        producer.send(f"old{i}".encode())
    time.sleep(1.2)
    for i in range(2):
        producer.send(f"new{i}".encode())
    ok(api.post(f"{base}/subscription/a/expireMessages/0"))  # 0 expires nothing (Pulsar)
    assert backlog(api, base, "a") == 5
    ok(api.post(f"{base}/subscription/a/expireMessages/1"))
    assert backlog(api, base, "a") == 2
    assert backlog(api, base, "b") == 5
    consumer = client.subscribe(topic, "a")
    assert drain(consumer) == [b"new0", b"new1"]
    consumer.close()
    ok(api.post(f"{base}/all_subscription/expireMessages/1"))
    assert backlog(api, base, "b") == 2
    refused(api.post(f"{base}/subscription/none/expireMessages/1"), 404)
    producer.close()


def test_persistent_stats_internal_stats_and_unload(
    api: httpx.Client, ns: str, client: Any
) -> None:
    topic = f"persistent://{ns}/st"
    base = f"/admin/v2/persistent/{ns}/st"
    consumer = client.subscribe(topic, "s", consumer_name="c1")
    producer = client.create_producer(topic, producer_name="p1", batching_enabled=False)
    for i in range(4):
        producer.send(f"m{i}".encode())
    stats = ok(api.get(f"{base}/stats"), 200).json()
    assert stats["msgInCounter"] == 4
    assert stats["bytesInCounter"] > 0
    assert [p["producerName"] for p in stats["publishers"]] == ["p1"]
    sub = stats["subscriptions"]["s"]
    assert sub["type"] == "Exclusive"
    assert sub["isDurable"] is True
    assert [c["consumerName"] for c in sub["consumers"]] == ["c1"]
    internal = ok(api.get(f"{base}/internalStats"), 200).json()
    assert internal["numberOfEntries"] == 4
    assert internal["ledgers"]
    assert internal["ledgers"][-1]["ledgerId"] >= 0
    assert set(internal["cursors"]) == {"s"}
    assert drain(consumer, 1000) == [f"m{i}".encode() for i in range(4)]
    wait_until(lambda: backlog(api, base, "s") == 0)
    last = internal["lastConfirmedEntry"]
    wait_until(
        lambda: (
            ok(api.get(f"{base}/internalStats"), 200).json()["cursors"]["s"]["markDeletePosition"]
            == last
        )
    )
    # unload: the clients reconnect by themselves
    ok(api.put(f"{base}/unload"))
    producer.send(b"after")
    assert consumer.receive(timeout_millis=RECEIVE_MS).data() == b"after"
    refused(api.put(f"/admin/v2/persistent/{ns}/never/unload"), 404)
    refused(api.get(f"/admin/v2/persistent/{ns}/never/internalStats"), 404)
    producer.close()
    consumer.close()


def test_partitioned_cursor_operations_fan_out(api: httpx.Client, ns: str, client: Any) -> None:
    topic = f"persistent://{ns}/pc"
    base = f"/admin/v2/persistent/{ns}/pc"
    ok(api.put(f"{base}/partitions", json=2))
    ok(api.put(f"{base}/subscription/s", json=EARLIEST))
    for i in range(2):
        subs = ok(api.get(f"{base}-partition-{i}/subscriptions"), 200).json()
        assert subs == ["s"]
    producer = client.create_producer(
        topic,
        batching_enabled=False,
        message_routing_mode=pulsar.PartitionsRoutingMode.RoundRobinDistribution,
    )
    ids = [producer.send(f"m{i}".encode()) for i in range(4)]

    def total_backlog() -> int:
        agg = ok(api.get(f"{base}/partitioned-stats"), 200).json()
        return int(agg["subscriptions"]["s"]["msgBacklog"])

    assert total_backlog() == 4
    ok(api.post(f"{base}/subscription/s/skip_all"))
    assert total_backlog() == 0
    ok(api.post(f"{base}/subscription/s/resetcursor/0"))
    assert total_backlog() == 4
    refused(api.post(f"{base}/subscription/s/skip/1"), 405, "partitioned")
    refused(api.post(f"{base}/subscription/s/resetcursor", json={"ledgerId": 1, "entryId": 0}), 405)
    ids_p1 = [m for m in ids if m.partition() == 1]
    assert len(ids_p1) == 2  # round robin
    last = ids_p1[-1]
    one = {"ledgerId": last.ledger_id(), "entryId": last.entry_id(), "partitionIndex": 1}
    ok(api.post(f"{base}/subscription/s/resetcursor", json=one))
    assert total_backlog() == 2 + 1  # partition 0 untouched, partition 1 from its last
    ok(api.post(f"{base}/all_subscription/expireMessages/3600"))
    assert total_backlog() == 3
    ok(api.put(f"{base}/unload"))
    ok(api.delete(f"{base}/subscription/s"))
    assert ok(api.get(f"{base}/subscriptions"), 200).json() == []
    producer.close()


def test_non_persistent_subscriptions_and_refused_cursor_operations(
    api: httpx.Client, ns: str, client: Any
) -> None:
    topic = f"non-persistent://{ns}/np"
    base = f"/admin/v2/non-persistent/{ns}/np"
    consumer = client.subscribe(topic, "s", consumer_name="npc")
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(3):
        producer.send(f"n{i}".encode())
    assert drain(consumer, 1000) == [b"n0", b"n1", b"n2"]
    stats = ok(api.get(f"{base}/stats"), 200).json()
    assert stats["msgInCounter"] == 3
    assert stats["subscriptions"]["s"]["consumers"][0]["consumerName"] == "npc"
    internal = ok(api.get(f"{base}/internalStats"), 200).json()
    assert internal["entriesAddedCounter"] == 3
    assert set(internal["cursors"]) == {"s"}
    assert ok(api.get(f"{base}/subscriptions"), 200).json() == ["s"]
    for path in (
        "subscription/s/skip/1",
        "subscription/s/skip_all",
        "subscription/s/resetcursor/0",
        "subscription/s/expireMessages/1",
        "all_subscription/expireMessages/1",
    ):
        refused(api.post(f"{base}/{path}"), 405, "not a persistent topic")
    refused(api.post(f"{base}/subscription/s/resetcursor", json={"ledgerId": 0, "entryId": 0}), 405)
    refused(api.put(f"{base}/subscription/other"), 405, "non-persistent")
    refused(api.delete(f"{base}/subscription/s"), 412)
    ok(api.delete(f"{base}/subscription/s?force=true"))
    assert ok(api.get(f"{base}/subscriptions"), 200).json() == []
    refused(api.delete(f"{base}/subscription/s"), 404)
    ok(api.put(f"{base}/unload"))
    refused(api.put(f"/admin/v2/non-persistent/{ns}/never/unload"), 404)
    producer.close()
    consumer.close()


# ---------------------------------------------------------------------------- lookup and errors
@pytest.mark.parametrize("domain", ["persistent", "non-persistent"])
def test_lookup(api: httpx.Client, standalone: StandaloneProcess, ns: str, domain: str) -> None:
    found = ok(api.get(f"/lookup/v2/topic/{domain}/{ns}/any"), 200).json()
    # Pulsar's LookupData without TLS: null TLS urls are left out, brokerUrlSsl is "".
    assert found == {
        "brokerUrl": standalone.service_url,
        "httpUrl": standalone.web_url,
        "nativeUrl": standalone.service_url,
        "brokerUrlSsl": "",
    }
    assert "brokerUrlTls" not in found
    assert "httpUrlTls" not in found
    refused(api.get(f"/lookup/v2/topic/{domain}/{ns}x/any"), 404)
    refused(api.get(f"/lookup/v2/topic/weird/{ns}/any"), 412, "domain")


def test_unknown_routes_and_methods(api: httpx.Client) -> None:
    refused(api.get("/admin/v2/nothing-here"), 404)
    refused(api.patch("/admin/v2/clusters"), 405)
