"""Message TTL and retention ENFORCED by a real ``magnetar standalone``, with the official client.

The standalone runs with a short expiry check interval (messageExpiryCheckIntervalInMinutes,
here ~0.3 s), a managed-ledger rollover every 5 entries and, at broker level,
allowAutoTopicCreationType=partitioned with defaultNumPartitions=2 (for
``partitions?checkAllowAutoCreation=true`` without a namespace override).
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
from tests.kit.process import running
from tests.kit.standalone import StandaloneProcess

ENTRIES_PER_LEDGER = 5
ENV = {
    "MAGNETAR_STANDALONE_MESSAGE_EXPIRY_CHECK_INTERVAL_IN_MINUTES": "0.005",
    "MAGNETAR_STANDALONE_MANAGED_LEDGER_MIN_LEDGER_ROLLOVER_TIME_MINUTES": "0",
    "MAGNETAR_STANDALONE_MANAGED_LEDGER_MAX_ENTRIES_PER_LEDGER": str(ENTRIES_PER_LEDGER),
    "MAGNETAR_STANDALONE_ALLOW_AUTO_TOPIC_CREATION_TYPE": "partitioned",
    "MAGNETAR_STANDALONE_DEFAULT_NUM_PARTITIONS": "2",
}


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneProcess]:
    """This module's standalone (overrides the conftest one; ``client`` connects to it)."""
    sa = StandaloneProcess(data_dir=tmp_path_factory.mktemp("ttl") / "data", env=ENV)
    with running(sa) as process:
        yield process


@pytest.fixture(scope="module")
def api(standalone: StandaloneProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=standalone.web_url, timeout=10) as http:
        yield http


NON_PARTITIONED = {"allowAutoTopicCreation": True, "topicType": "non-partitioned"}


def make_namespace(api: httpx.Client, prefix: str, *, auto_partitioned: bool = False) -> str:
    """A fresh namespace; unless ``auto_partitioned`` it overrides this module's broker-level
    "partitioned" auto-creation, so the official client's topics stay non-partitioned."""
    name = f"public/{prefix}-{uuid.uuid4().hex[:8]}"
    assert api.put(f"/admin/v2/namespaces/{name}").status_code == 204
    if not auto_partitioned:
        r = api.post(f"/admin/v2/namespaces/{name}/autoTopicCreation", json=NON_PARTITIONED)
        assert r.status_code == 204, r.text
    return name


@pytest.fixture
def ns(api: httpx.Client) -> str:
    return make_namespace(api, "ns")


def stats(api: httpx.Client, topic: str) -> Any:
    r = api.get(f"/admin/v2/{topic.replace('://', '/')}/stats")
    assert r.status_code == 200, r.text
    return r.json()


def ledger_ids(api: httpx.Client, topic: str) -> list[int]:
    r = api.get(f"/admin/v2/{topic.replace('://', '/')}/internalStats")
    assert r.status_code == 200, r.text
    return [li["ledgerId"] for li in r.json()["ledgers"]]


def test_message_ttl_expires_the_backlog(api: httpx.Client, ns: str, client: Any) -> None:
    topic = f"persistent://{ns}/ttl"
    assert api.post(f"/admin/v2/namespaces/{ns}/messageTTL", json=2).status_code == 204
    client.subscribe(topic, "idle").close()  # a durable subscription without consumers
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(5):
        producer.send(f"old{i}".encode())
    assert stats(api, topic)["subscriptions"]["idle"]["msgBacklog"] == 5
    wait_until(lambda: stats(api, topic)["subscriptions"]["idle"]["msgBacklog"] == 0, 10)
    assert stats(api, topic)["subscriptions"]["idle"]["msgRateExpired"] > 0
    consumer = client.subscribe(topic, "idle")
    with pytest.raises(pulsar.Timeout):
        consumer.receive(timeout_millis=500)
    producer.send(b"fresh")  # still within its TTL: delivered
    assert consumer.receive(timeout_millis=5000).data() == b"fresh"
    consumer.close()
    producer.close()


def test_no_ttl_keeps_the_backlog(api: httpx.Client, ns: str, client: Any) -> None:
    topic = f"persistent://{ns}/keep"
    client.subscribe(topic, "idle").close()
    producer = client.create_producer(topic, batching_enabled=False)
    producer.send(b"kept")
    time.sleep(1.5)  # several check intervals; the broker default TTL is 0 (never)
    assert stats(api, topic)["subscriptions"]["idle"]["msgBacklog"] == 1
    producer.close()


def _fill_and_consume(client: Any, topic: str, n: int) -> None:
    consumer = client.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(n):
        producer.send(f"m{i}".encode())
    for _ in range(n):
        consumer.acknowledge(consumer.receive(timeout_millis=5000))
    producer.close()
    consumer.close()


def test_retention_zero_deletes_consumed_ledgers_and_infinite_keeps_them(
    api: httpx.Client, client: Any
) -> None:
    ns_zero, ns_keep = (make_namespace(api, "ret") for _ in range(2))
    for name, minutes, mb in ((ns_zero, 0, 0), (ns_keep, -1, -1)):
        body = {"retentionTimeInMinutes": minutes, "retentionSizeInMB": mb}
        assert api.post(f"/admin/v2/namespaces/{name}/retention", json=body).status_code == 204
    zero, keep = f"persistent://{ns_zero}/r", f"persistent://{ns_keep}/r"
    for topic in (zero, keep):
        _fill_and_consume(client, topic, 4 * ENTRIES_PER_LEDGER)
    # Retention 0: every fully consumed, rolled-over ledger goes; the current one stays.
    wait_until(lambda: len(ledger_ids(api, zero)) <= 1)
    # Retention -1: all of them stay.
    time.sleep(1.0)
    assert len(ledger_ids(api, keep)) >= 4
    # Changing the policy applies to the loaded topic at once.
    body = {"retentionTimeInMinutes": 0, "retentionSizeInMB": 0}
    assert api.post(f"/admin/v2/namespaces/{ns_keep}/retention", json=body).status_code == 204
    wait_until(lambda: len(ledger_ids(api, keep)) <= 1)


def test_check_allow_auto_creation_uses_the_broker_setting(api: httpx.Client) -> None:
    ns = make_namespace(api, "auto", auto_partitioned=True)
    base = f"/admin/v2/persistent/{ns}"
    got = api.get(f"{base}/auto/partitions?checkAllowAutoCreation=true").json()
    assert got["partitions"] == 2
    assert api.get(f"{base}/partitioned").json() == [f"persistent://{ns}/auto"]
    # Without the flag nothing is created.
    assert api.get(f"{base}/other/partitions").json()["partitions"] == 0
    # A namespace override beats the broker setting.
    r = api.post(f"/admin/v2/namespaces/{ns}/autoTopicCreation", json=NON_PARTITIONED)
    assert r.status_code == 204
    got = api.get(f"{base}/third/partitions?checkAllowAutoCreation=true").json()
    assert got["partitions"] == 0


def test_binary_metadata_request_auto_creates_partitioned_topics(
    api: httpx.Client, client: Any
) -> None:
    # public/default has no override: the broker's "partitioned" type with 2 partitions applies
    # when the official client asks PARTITIONED_METADATA for a topic that does not exist yet.
    topic = f"persistent://public/default/auto-bin-{uuid.uuid4().hex[:8]}"
    producer = client.create_producer(topic)
    consumer = client.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
    for i in range(4):
        producer.send(f"m{i}".encode(), partition_key=f"k{i}")
    got = sorted(consumer.receive(timeout_millis=5000).data() for _ in range(4))
    assert got == [b"m0", b"m1", b"m2", b"m3"]
    path = f"/admin/v2/persistent/public/default/{topic.rsplit('/', 1)[1]}/partitions"
    assert api.get(path).json()["partitions"] == 2
    producer.close()
    consumer.close()
