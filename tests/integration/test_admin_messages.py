"""Reading messages through the admin API against a real standalone, with the official client
producing: peek-messages (the cursor does not move), examine-message, get-message-by-id,
last-message-id, and the real ``backlogSize`` in topic stats. Pulsar's REST paths and headers;
batches split into their messages, compressed payloads come back decompressed."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
from typing import Any

import pulsar
import pytest

from magnetar.client.admin import AdminClient
from magnetar.client.admin_errors import NotAllowed, NotFound, PreconditionFailed
from tests.kit.process import MAGNETAR_CLI
from tests.kit.standalone import StandaloneProcess, admin_call, topic_name


def _rest(topic: str) -> str:
    return topic.replace("persistent://", "/admin/v2/persistent/")


def _produce(client: Any, topic: str, n: int, **options: Any) -> list[Any]:
    producer = client.create_producer(topic, **options)
    ids = [
        producer.send(f"m{i}".encode(), properties={"i": str(i)}, partition_key=f"k{i}")
        for i in range(n)
    ]
    producer.close()
    return ids


def _backlog(standalone: StandaloneProcess, topic: str, sub: str) -> int:
    stats = admin_call(standalone, "GET", f"{_rest(topic)}/stats")
    return int(stats["subscriptions"][sub]["msgBacklog"])


async def test_peek_shows_the_backlog_without_consuming_it(
    client: Any, standalone: StandaloneProcess
) -> None:
    topic = topic_name("peek")
    admin_call(
        standalone, "PUT", f"{_rest(topic)}/subscription/audit", {"ledgerId": -1, "entryId": -1}
    )
    ids = _produce(client, topic, 5, batching_enabled=False)
    async with AdminClient(standalone.web_url) as admin:
        first = await admin.peek_messages(topic, "audit", 3)
        again = await admin.peek_messages(topic, "audit", 3)
        everything = await admin.peek_messages(topic, "audit", 50)
    assert [m.payload for m in first] == [b"m0", b"m1", b"m2"]
    assert again == first, "peeking moved the cursor"
    assert len(everything) == 5
    assert _backlog(standalone, topic, "audit") == 5
    m1 = first[1]
    assert m1.message_id == f"{ids[1].ledger_id()}:{ids[1].entry_id()}"
    assert m1.properties == {"i": "1"}
    assert m1.key == "k1"
    assert str(m1.publish_time).endswith("Z")

    consumer = client.subscribe(topic, "audit")
    consumer.acknowledge(consumer.receive(timeout_millis=5000))  # m0
    second = consumer.receive(timeout_millis=5000)
    third = consumer.receive(timeout_millis=5000)
    consumer.acknowledge(third)  # m2: acked out of order, m1 still pending
    consumer.close()
    async with AdminClient(standalone.web_url) as admin:
        after = await admin.peek_messages(topic, "audit", 3)
    assert second.data() == b"m1"
    assert [m.payload for m in after] == [b"m1", b"m3", b"m4"]


async def test_a_batch_is_split_and_a_compressed_one_decompressed(
    client: Any, standalone: StandaloneProcess
) -> None:
    topic = topic_name("peek-batch")
    admin_call(standalone, "PUT", f"{_rest(topic)}/subscription/s", {"ledgerId": -1, "entryId": -1})
    producer = client.create_producer(
        topic,
        batching_enabled=True,
        batching_max_messages=4,
        batching_max_publish_delay_ms=1000,
        compression_type=pulsar.CompressionType.LZ4,
    )
    payload = b"x" * 300  # compresses well: a wrong decompression cannot pass unnoticed
    for i in range(4):
        producer.send_async(payload + bytes([65 + i]), None, properties={"n": str(i)})
    producer.flush()
    producer.close()
    async with AdminClient(standalone.web_url) as admin:
        peeked = await admin.peek_messages(topic, "s", 4)
    assert [m.payload for m in peeked] == [payload + bytes([65 + i]) for i in range(4)]
    assert [m.properties for m in peeked] == [{"n": str(i)} for i in range(4)]
    ledger_entry = peeked[0].message_id.rsplit(":", 1)[0]
    assert [m.message_id for m in peeked] == [f"{ledger_entry}:{i}" for i in range(4)]


def test_peek_answers_with_pulsars_headers(client: Any, standalone: StandaloneProcess) -> None:
    topic = topic_name("peek-http")
    admin_call(standalone, "PUT", f"{_rest(topic)}/subscription/s", {"ledgerId": -1, "entryId": -1})
    (mid,) = _produce(client, topic, 1, batching_enabled=False)
    url = f"{standalone.web_url}{_rest(topic)}/subscription/s/position/1"
    with urllib.request.urlopen(url, timeout=10) as answer:
        body = answer.read()
        headers = answer.headers
    assert body == b"m0"
    assert headers["Content-Type"] == "application/octet-stream"
    assert headers["X-Pulsar-Message-ID"] == f"{mid.ledger_id()}:{mid.entry_id()}"
    assert headers["X-Pulsar-PROPERTY-i"] == "0"
    assert json.loads(headers["X-Pulsar-Property"]) == {"i": "0"}
    assert headers["X-Pulsar-partition-key"] == "k0"
    assert "X-Pulsar-num-batch-message" not in headers


async def test_examine_get_by_id_and_last_message_id(
    client: Any, standalone: StandaloneProcess
) -> None:
    topic = topic_name("examine")
    ids = _produce(client, topic, 4, batching_enabled=False)
    async with AdminClient(standalone.web_url) as admin:
        (earliest,) = await admin.examine_message(topic, "earliest", 1)
        (second,) = await admin.examine_message(topic, "earliest", 2)
        (latest,) = await admin.examine_message(topic, "latest", 1)
        (before_last,) = await admin.examine_message(topic, "latest", 2)
        (by_id,) = await admin.get_message_by_id(topic, ids[2].ledger_id(), ids[2].entry_id())
        last = await admin.get_last_message_id(topic)
    assert [earliest.payload, second.payload, latest.payload, before_last.payload] == [
        b"m0",
        b"m1",
        b"m3",
        b"m2",
    ]
    assert by_id.payload == b"m2"
    assert (last.ledger_id, last.entry_id) == (ids[-1].ledger_id(), ids[-1].entry_id())


async def test_bad_requests_get_pulsars_statuses(
    client: Any, standalone: StandaloneProcess
) -> None:
    topic = topic_name("peek-bad")
    admin_call(standalone, "PUT", f"{_rest(topic)}/subscription/s", {"ledgerId": -1, "entryId": -1})
    ids = _produce(client, topic, 2, batching_enabled=False)
    partitioned = topic_name("peek-part")
    admin_call(standalone, "PUT", f"{_rest(partitioned)}/partitions", 2)
    async with AdminClient(standalone.web_url) as admin:
        with pytest.raises(NotFound, match="Message not found"):
            await admin.get_message_by_id(topic, ids[-1].ledger_id(), ids[-1].entry_id() + 1)
        with pytest.raises(NotFound, match="Message not found"):
            await admin.examine_message(topic, "earliest", 3)
        with pytest.raises(NotFound):
            await admin.peek_messages(topic, "no-such-subscription")
        assert await admin.peek_messages(topic, "s", 10) != []
        with pytest.raises(NotAllowed):
            await admin.peek_messages(partitioned, "s")
        with pytest.raises(NotAllowed):
            await admin.get_last_message_id(partitioned)
        with pytest.raises(PreconditionFailed):
            await admin.examine_message(topic, "earliest", 0)
    with pytest.raises(urllib.error.HTTPError) as refused:
        admin_call(standalone, "GET", f"{_rest(topic)}/examinemessage?initialPosition=middle")
    assert refused.value.code == 400


def test_backlog_size_follows_the_slowest_subscription(
    client: Any, standalone: StandaloneProcess
) -> None:
    topic = topic_name("backlog-size")
    slow = client.subscribe(topic, "slow")
    fast = client.subscribe(topic, "fast")
    _produce(client, topic, 20, batching_enabled=False)

    def stats_once_acked(slow_backlog: int) -> dict[str, Any]:
        """The stats once the client's (grouped, asynchronous) acks have reached the broker."""
        deadline = time.monotonic() + 10
        while True:
            stats: dict[str, Any] = admin_call(standalone, "GET", f"{_rest(topic)}/stats")
            subs = stats["subscriptions"]
            if subs["fast"]["msgBacklog"] == 0 and subs["slow"]["msgBacklog"] == slow_backlog:
                return stats
            assert time.monotonic() < deadline, f"acks never arrived: {subs}"
            time.sleep(0.05)

    for _ in range(20):
        fast.acknowledge(fast.receive(timeout_millis=5000))
    full = stats_once_acked(20)
    assert full["backlogSize"] > 0
    assert full["backlogSize"] == full["subscriptions"]["slow"]["backlogSize"]
    assert full["subscriptions"]["fast"]["backlogSize"] == 0
    for _ in range(10):
        slow.acknowledge(slow.receive(timeout_millis=5000))
    half = stats_once_acked(10)["backlogSize"]
    assert 0 < half < full["backlogSize"]
    for _ in range(10):
        slow.acknowledge(slow.receive(timeout_millis=5000))
    assert stats_once_acked(0)["backlogSize"] == 0
    slow.close()
    fast.close()


def test_cli_peek_and_last_message_id(client: Any, standalone: StandaloneProcess) -> None:
    topic = topic_name("peek-cli")
    admin_call(standalone, "PUT", f"{_rest(topic)}/subscription/s", {"ledgerId": -1, "entryId": -1})
    ids = _produce(client, topic, 2, batching_enabled=False)

    def cli(*args: str, json_output: bool = False) -> str:
        options = ["--json"] if json_output else []
        return subprocess.run(
            [*MAGNETAR_CLI, "admin", "--admin-url", standalone.web_url, *options, "topics", *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout

    peeked = cli("peek-messages", topic, "-s", "s", "-n", "2")
    assert "m0" in peeked
    assert "m1" in peeked
    assert f"{ids[0].ledger_id()}:{ids[0].entry_id()}" in peeked
    as_json = json.loads(cli("peek-messages", topic, "-s", "s", json_output=True))
    assert [(m["payload"], m["properties"]) for m in as_json] == [("m0", {"i": "0"})]
    last = cli("last-message-id", topic)
    assert last.strip() == f"{ids[-1].ledger_id()}:{ids[-1].entry_id()}"
