"""The broker's ``/metrics`` and health check on a real standalone, driven by the official client.

Counters must move by exactly what was produced and consumed; the out counters must not go
back when the consumer leaves; the standalone's in-process bookie shows its adds too.
"""

from __future__ import annotations

import time
import urllib.request

from tests.kit.scrape import scrape, value
from tests.kit.standalone import StandaloneProcess, admin_call, official_client, topic_name

MESSAGES = 10
PAYLOAD = b"m" * 200
RECEIVE_MS = 5000


def wait_for(sa: StandaloneProcess, name: str, expected: float, **labels: str) -> float:
    """Scrape until ``name`` reads ``expected`` (acks and closes reach the broker a little
    after the client returns); the last value read."""
    deadline = time.monotonic() + 10
    while True:
        got = value(scrape(sa.web_url), name, **labels)
        if got == expected or time.monotonic() > deadline:
            return got
        time.sleep(0.1)


def test_counters_move_by_what_was_produced_and_consumed(standalone: StandaloneProcess) -> None:
    topic = topic_name("metrics")
    labels = {"topic": topic, "namespace": "public/default"}
    bookie_adds_before = value(scrape(standalone.web_url), "bookie_journal_add_entries_total")
    client = official_client(standalone)
    try:
        consumer = client.subscribe(topic, "sub")
        producer = client.create_producer(topic, batching_enabled=False)
        for i in range(MESSAGES):
            producer.send(PAYLOAD + bytes([i]))
        received = [consumer.receive(timeout_millis=RECEIVE_MS) for _ in range(MESSAGES)]
        for message in received:
            consumer.acknowledge(message)

        samples = scrape(standalone.web_url)
        assert value(samples, "pulsar_in_messages_total", **labels) == MESSAGES
        in_bytes = value(samples, "pulsar_in_bytes_total", **labels)
        assert in_bytes > MESSAGES * len(PAYLOAD)  # payloads plus metadata, as stored
        assert value(samples, "pulsar_out_messages_total", **labels) == MESSAGES
        assert value(samples, "pulsar_out_bytes_total", **labels) == in_bytes
        assert value(samples, "pulsar_producers_count", **labels) == 1
        assert value(samples, "pulsar_consumers_count", **labels) == 1
        assert value(samples, "pulsar_subscriptions_count", **labels) == 1
        storage = value(samples, "pulsar_storage_size", **labels)
        assert storage >= in_bytes
        stats = admin_call(standalone, "GET", f"/admin/v2/{topic.replace('://', '/')}/stats")
        assert stats["storageSize"] == storage  # the ledger being written counts too
        assert value(samples, "pulsar_topics_count") >= 1
        assert wait_for(standalone, "pulsar_msg_backlog", 0, **labels) == 0
        # The in-process bookie journalled one entry per unbatched message.
        bookie_adds = value(samples, "bookie_journal_add_entries_total")
        assert bookie_adds - bookie_adds_before >= MESSAGES
        assert value(samples, "bookie_read_only") == 0
        assert value(samples, "magnetar_event_loop_lag_seconds_count") >= 1

        # The consumer leaves: what it was sent stays counted.
        consumer.close()
        assert wait_for(standalone, "pulsar_consumers_count", 0, **labels) == 0
        assert value(scrape(standalone.web_url), "pulsar_out_messages_total", **labels) == MESSAGES
        producer.close()
        assert wait_for(standalone, "pulsar_producers_count", 0, **labels) == 0
    finally:
        client.close()


def test_backlog_counts_unacknowledged(standalone: StandaloneProcess) -> None:
    topic = topic_name("backlog")
    client = official_client(standalone)
    try:
        consumer = client.subscribe(topic, "slow")
        producer = client.create_producer(topic, batching_enabled=False)
        for _ in range(3):
            producer.send(PAYLOAD)
        assert wait_for(standalone, "pulsar_msg_backlog", 3, topic=topic) == 3
        consumer.close()
        producer.close()
    finally:
        client.close()


def test_health_answers_ok(standalone: StandaloneProcess) -> None:
    url = standalone.web_url + "/admin/v2/brokers/health"
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        assert response.read() == b"ok"
