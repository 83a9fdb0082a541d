"""Chunked messages from the official client (``chunking_enabled``, payloads over the broker's
max message size) against a real standalone with a 64 KiB limit: stored and dispatched whole to
Exclusive and Shared subscriptions (every chunk of a message to one Shared consumer), once each
with deduplication on (every chunk carries the message's sequence id), and across a broker
restart in the middle of a stream of chunked messages; and ``magnetar.client``'s chunking,
both ways with the official client."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pulsar
import pytest

from magnetar.client import Client
from magnetar.client.errors import InvalidConfiguration
from magnetar.client.producer_options import ProducerOptions
from tests.kit.process import running
from tests.kit.standalone import StandaloneProcess, admin_call, official_client, topic_name

MAX_MESSAGE_SIZE = 64 * 1024
BIG = 200_000  # about four chunks


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneProcess]:
    env = {"MAGNETAR_STANDALONE_MAX_MESSAGE_SIZE": str(MAX_MESSAGE_SIZE)}
    data = tmp_path_factory.mktemp("chunks") / "data"
    with running(StandaloneProcess(data_dir=data, env=env)) as process:
        yield process


def _payloads(n: int, tag: int = 0) -> list[bytes]:
    return [bytes([tag, i]) + bytes([i]) * BIG for i in range(n)]


def _producer(client: Any, topic: str, **options: Any) -> Any:
    return client.create_producer(
        topic, chunking_enabled=True, batching_enabled=False, send_timeout_millis=30_000, **options
    )


def _receive_all(
    consumers: list[Any], expected: int, deadline_s: float = 30
) -> dict[int, list[bytes]]:
    """What each consumer (by index) receives and acknowledges until ``expected`` in total."""
    got: dict[int, list[bytes]] = {i: [] for i in range(len(consumers))}
    deadline = time.monotonic() + deadline_s
    while sum(len(v) for v in got.values()) < expected:
        assert time.monotonic() < deadline, f"only {sum(len(v) for v in got.values())} arrived"
        for i, consumer in enumerate(consumers):
            try:
                message = consumer.receive(timeout_millis=100)
            except pulsar.Timeout:
                continue
            got[i].append(message.data())
            consumer.acknowledge(message)
    return got


def _receive_until_quiet(consumer: Any, quiet_ms: int = 2000) -> list[bytes]:
    got = []
    while True:
        try:
            message = consumer.receive(timeout_millis=quiet_ms)
        except pulsar.Timeout:
            return got
        got.append(message.data())
        consumer.acknowledge(message)


def test_chunked_messages_reach_an_exclusive_consumer_whole(client: Any) -> None:
    topic = topic_name("chunks-excl")
    consumer = client.subscribe(topic, "s")
    producer = _producer(client, topic)
    payloads = _payloads(3)
    ids = [producer.send(p) for p in payloads]
    assert len({str(i) for i in ids}) == 3
    assert _receive_all([consumer], 3)[0] == payloads


def test_every_chunk_of_a_message_goes_to_one_shared_consumer(client: Any) -> None:
    """Two Shared consumers with small receiver queues: round-robin per entry would spread
    each message's chunks over both and neither could rebuild any message."""
    topic = topic_name("chunks-shared")
    consumers = [
        client.subscribe(
            topic, "s", consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=3
        )
        for _ in range(2)
    ]
    producer = _producer(client, topic)
    payloads = _payloads(10)
    for p in payloads:
        producer.send_async(p, None)
    producer.flush()
    got = _receive_all(consumers, 10)
    assert sorted(got[0] + got[1]) == sorted(payloads)
    assert got[0], "the first consumer got no message"
    assert got[1], "the second consumer got no message"


def test_deduplication_keeps_every_chunk_and_drops_a_resent_message(
    client: Any, standalone: StandaloneProcess
) -> None:
    admin_call(standalone, "POST", "/admin/v2/namespaces/public/default/deduplication", True)
    try:
        topic = topic_name("chunks-dedup")
        consumer = client.subscribe(topic, "s")
        producer = _producer(client, topic, producer_name="dedup-chunks")
        payloads = _payloads(3)
        ids = [producer.send(p) for p in payloads]
        assert all(i.ledger_id() >= 0 for i in ids), f"a chunk was taken for a duplicate: {ids}"
        producer.close()
        # The same producer name resending sequence id 0: the whole message is a duplicate.
        again = _producer(client, topic, producer_name="dedup-chunks", initial_sequence_id=-1)
        assert again.last_sequence_id() == 2
        assert _receive_all([consumer], 3)[0] == payloads
        with pytest.raises(pulsar.Timeout):
            consumer.receive(timeout_millis=500)
    finally:
        admin_call(standalone, "DELETE", "/admin/v2/namespaces/public/default/deduplication")


async def test_our_client_chunks_and_rebuilds_with_the_official_one(
    client: Any, standalone: StandaloneProcess
) -> None:
    """magnetar.client's producer chunks what the official consumer rebuilds, its consumer
    rebuilds what the official producer chunks, and acknowledging a rebuilt message
    acknowledges every chunk (the backlog drains)."""
    ours_topic, theirs_topic = topic_name("chunks-ours"), topic_name("chunks-theirs")
    payloads = _payloads(3)
    async with Client(standalone.service_url, operation_timeout_s=10) as ours:
        consumer = await ours.subscribe(theirs_topic, "s")
        reader = client.create_reader(ours_topic, pulsar.MessageId.earliest)
        producer = await ours.create_producer(
            ours_topic, batching_enabled=False, chunking_enabled=True
        )
        for p in payloads:
            await producer.send(p)
        assert [reader.read_next(5000).data() for _ in payloads] == payloads
        theirs = _producer(client, theirs_topic)
        for p in payloads:
            theirs.send(p)
        got = []
        for _ in payloads:
            message = await consumer.receive(timeout_s=10)
            got.append(message.data)
            consumer.acknowledge(message)
        assert got == payloads
        await consumer.close()
    deadline = time.monotonic() + 10
    path = f"/admin/v2/persistent/public/default/{theirs_topic.rsplit('/', 1)[1]}/stats"
    while admin_call(standalone, "GET", path)["subscriptions"]["s"]["msgBacklog"] != 0:
        assert time.monotonic() < deadline, "the chunks of acknowledged messages stayed unacked"
        await asyncio.sleep(0.1)


async def test_our_shared_consumers_each_rebuild_whole_messages(
    standalone: StandaloneProcess,
) -> None:
    topic = topic_name("chunks-ours-shared")
    payloads = _payloads(6)
    async with Client(standalone.service_url, operation_timeout_s=10) as ours:
        consumers = [
            await ours.subscribe(topic, "s", subscription_type="Shared", receiver_queue_size=3)
            for _ in range(2)
        ]
        producer = await ours.create_producer(topic, batching_enabled=False, chunking_enabled=True)
        for p in payloads:
            await producer.send(p)
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(got) < len(payloads):
            assert time.monotonic() < deadline, f"{len(got)} of {len(payloads)} arrived"
            for c in consumers:
                for message in c.poll_many():
                    got.append(message.data)
                    c.acknowledge(message)
            await asyncio.sleep(0.05)
        assert sorted(got) == sorted(payloads)


def test_chunking_with_batching_is_refused() -> None:
    with pytest.raises(InvalidConfiguration, match="batching"):
        ProducerOptions(chunking_enabled=True, batching_enabled=True).validate()


@pytest.mark.parametrize("deduplication", [True, False])
def test_a_broker_restart_mid_stream_loses_and_corrupts_nothing(
    standalone: StandaloneProcess, deduplication: bool
) -> None:
    """Last tests of the module: they restart its standalone. Chunked messages are in flight
    when the broker stops (gracefully: the client resends what was not acknowledged)."""
    path = "/admin/v2/namespaces/public/default/deduplication"
    admin_call(standalone, "POST", path, deduplication)
    topic = topic_name("chunks-restart")
    client = official_client(standalone, operation_timeout_s=30)
    try:
        client.subscribe(topic, "s").close()  # the subscription keeps everything from here
        producer = _producer(client, topic, producer_name=f"restart-{deduplication}")
        payloads = _payloads(20, tag=int(deduplication))
        outcomes: list[Any] = []
        for p in payloads:
            producer.send_async(p, lambda result, mid: outcomes.append(result))
        standalone.stop()
        standalone.start()
        producer.flush()
        deadline = time.monotonic() + 60
        while len(outcomes) < len(payloads):
            assert time.monotonic() < deadline, f"{len(outcomes)} of {len(payloads)} sends finished"
            time.sleep(0.1)
        assert all(r == pulsar.Result.Ok for r in outcomes), outcomes
        consumer = client.subscribe(topic, "s")
        got = _receive_until_quiet(consumer)
        if deduplication:
            assert got == payloads
        else:  # without deduplication a resent message may be stored twice, never corrupted
            assert set(got) == set(payloads)
    finally:
        client.close()
        admin_call(standalone, "DELETE", path)
