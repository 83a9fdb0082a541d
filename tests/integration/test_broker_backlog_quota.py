"""Backlog quotas with the official client: producer_exception refuses producers with
ProducerBlockedQuotaExceededException, producer_request_hold holds them until the backlog drops,
consumer_backlog_eviction moves the slow subscription forward. The standalone checks every 0.3 s.
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

PAYLOAD = b"x" * 200


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneProcess]:
    sa = StandaloneProcess(
        data_dir=tmp_path_factory.mktemp("quota") / "data",
        env={"MAGNETAR_STANDALONE_BACKLOG_QUOTA_CHECK_INTERVAL_IN_SECONDS": "0.3"},
    )
    with running(sa) as process:
        yield process


def _topic(web_url: str) -> str:
    ns = f"public/quota-{uuid.uuid4().hex[:8]}"
    httpx.put(f"{web_url}/admin/v2/namespaces/{ns}", timeout=10).raise_for_status()
    return f"persistent://{ns}/t"


def _set_quota(web_url: str, topic: str, policy: str, limit_size: int = 1000) -> None:
    ns = topic.removeprefix("persistent://").rsplit("/", 1)[0]
    with httpx.Client(base_url=web_url, timeout=10) as http:
        http.post(
            f"/admin/v2/namespaces/{ns}/backlogQuota",
            params={"backlogQuotaType": "destination_storage"},
            json={"limitSize": limit_size, "limitTime": -1, "policy": policy},
        ).raise_for_status()


def _fill(client: Any, topic: str, n: int = 20) -> Any:
    """A slow subscription and ``n`` entries of ~200 bytes behind it; returns its consumer."""
    consumer = client.subscribe(topic, "slow")
    producer = client.create_producer(topic, batching_enabled=False)
    for _ in range(n):
        producer.send(PAYLOAD)
    producer.close()
    return consumer


def _backlog(web_url: str, topic: str) -> int:
    path = topic.replace("persistent://", "/admin/v2/persistent/") + "/stats"
    doc = httpx.get(web_url + path, timeout=10).json()
    backlog: int = doc["subscriptions"]["slow"]["msgBacklog"]
    return backlog


def test_producer_exception_refuses_new_producers(
    client: Any, standalone: StandaloneProcess
) -> None:
    topic = _topic(standalone.web_url)
    consumer = _fill(client, topic)
    _set_quota(standalone.web_url, topic, "producer_exception")
    with pytest.raises(pulsar.ProducerBlockedQuotaExceededException):
        client.create_producer(topic)
    for _ in range(20):
        consumer.acknowledge(consumer.receive(timeout_millis=5000))
    wait_until(lambda: _backlog(standalone.web_url, topic) == 0)
    client.create_producer(topic).close()  # under the quota again
    consumer.close()


def test_producer_request_hold_holds_until_the_backlog_drops(
    standalone: StandaloneProcess,
) -> None:
    topic = _topic(standalone.web_url)
    c = pulsar.Client(standalone.service_url, operation_timeout_seconds=2)
    try:
        consumer = _fill(c, topic)
        _set_quota(standalone.web_url, topic, "producer_request_hold")
        with pytest.raises((pulsar.ProducerBlockedQuotaExceededError, pulsar.Timeout)):
            c.create_producer(topic)
        for _ in range(20):
            consumer.acknowledge(consumer.receive(timeout_millis=5000))
        wait_until(lambda: _backlog(standalone.web_url, topic) == 0)
        producer = c.create_producer(topic)
        producer.send(b"after")
        producer.close()
        assert consumer.receive(timeout_millis=5000).data() == b"after"
        consumer.close()
    finally:
        c.close()


def test_connected_producer_is_disconnected_when_over_quota(
    client: Any, standalone: StandaloneProcess
) -> None:
    topic = _topic(standalone.web_url)
    _set_quota(standalone.web_url, topic, "producer_exception")
    consumer = client.subscribe(topic, "slow")
    producer = client.create_producer(topic, batching_enabled=False, send_timeout_millis=3000)

    def send_until_refused() -> None:
        for _ in range(200):  # the periodic check disconnects it; reconnecting is refused
            producer.send(PAYLOAD)
            time.sleep(0.02)

    with pytest.raises(pulsar.PulsarException):
        send_until_refused()
    consumer.close()


def test_consumer_backlog_eviction_moves_the_slow_subscription(
    client: Any, standalone: StandaloneProcess
) -> None:
    topic = _topic(standalone.web_url)
    consumer = _fill(client, topic)
    assert _backlog(standalone.web_url, topic) == 20
    _set_quota(standalone.web_url, topic, "consumer_backlog_eviction")
    wait_until(lambda: 0 < _backlog(standalone.web_url, topic) <= 5)
    client.create_producer(topic).close()  # eviction never blocks producers
    consumer.close()
