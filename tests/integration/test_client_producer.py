"""Our asyncio producer against a real ``magnetar standalone``, checked by the official client.

Our producer sends (unbatched and batched, every codec, keys, properties, event time) and the
official pulsar-client consumer must receive every message intact, with the message ids our
producer reported. Partitioned topics: the official producer's key routing and ours must pick
the same partition for every key. Plus sequence ids, the bounded queue, and a broker-initiated
CLOSE_PRODUCER (topic unload) that the producer survives.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pulsar
import pytest

from magnetar.client import PartitionedProducer, Producer
from magnetar.client.client import Client
from magnetar.client.errors import ProducerClosed, ProducerQueueIsFull
from magnetar.client.routing import HashingScheme, key_partition
from tests.kit.standalone import StandaloneProcess, admin_call, topic_name

RECEIVE_MS = 5000


def subscribe(client: Any, topic: str) -> Any:
    return client.subscribe(
        topic, f"check-{uuid.uuid4().hex[:6]}", initial_position=pulsar.InitialPosition.Earliest
    )


def receive_all(consumer: Any, count: int) -> list[Any]:
    messages = []
    for _ in range(count):
        message = consumer.receive(timeout_millis=RECEIVE_MS)
        consumer.acknowledge(message)
        messages.append(message)
    return messages


def same_id(ours: Any, theirs: Any) -> bool:
    return (ours.ledger_id, ours.entry_id, ours.batch_index) == (
        theirs.ledger_id(),
        theirs.entry_id(),
        theirs.batch_index(),
    )


async def test_unbatched_sends_arrive_intact(standalone: StandaloneProcess, client: Any) -> None:
    topic = topic_name("cp-single")
    consumer = subscribe(client, topic)
    async with Client(standalone.service_url) as ours:
        producer = await ours.create_producer(topic, batching_enabled=False)
        assert isinstance(producer, Producer)
        ids = []
        for i in range(5):
            ids.append(
                await producer.send(
                    b"payload-%d" % i,
                    key=f"k{i}",
                    properties={"i": str(i), "kind": "single"},
                    event_time_ms=1_700_000_000_000 + i,
                )
            )
        assert producer.producer_name  # broker-assigned
    received = receive_all(consumer, 5)
    for i, (message, message_id) in enumerate(zip(received, ids, strict=True)):
        assert message.data() == b"payload-%d" % i
        assert message.partition_key() == f"k{i}"
        assert message.properties() == {"i": str(i), "kind": "single"}
        assert message.event_timestamp() == 1_700_000_000_000 + i
        assert message.producer_name() == producer.producer_name
        assert same_id(message_id, message.message_id())
        assert message_id.batch_index == -1


@pytest.mark.parametrize("codec", ["NONE", "LZ4", "ZLIB", "ZSTD", "SNAPPY"])
async def test_batched_sends_with_every_codec(
    standalone: StandaloneProcess, client: Any, codec: str
) -> None:
    topic = topic_name(f"cp-batch-{codec.lower()}")
    consumer = subscribe(client, topic)
    count = 120
    async with Client(standalone.service_url) as ours:
        producer = await ours.create_producer(
            topic, compression_type=codec, batching_max_messages=50
        )
        futures = [
            producer.send_nowait(
                (b"m%03d-" % i) * 20,
                key=f"key-{i % 7}" if i % 2 else None,
                properties={"n": str(i)},
                event_time_ms=i + 1,
            )
            for i in range(count)
        ]
        await producer.flush()
        ids = await asyncio.gather(*futures)
    assert {i.batch_size for i in ids} == {50, 20}  # 50 + 50 + 20: full batches, then a flush
    received = receive_all(consumer, count)
    for i, (message, message_id) in enumerate(zip(received, ids, strict=True)):
        assert message.data() == (b"m%03d-" % i) * 20
        assert message.partition_key() == (f"key-{i % 7}" if i % 2 else "")
        assert message.properties() == {"n": str(i)}
        assert message.event_timestamp() == i + 1
        assert same_id(message_id, message.message_id())


async def test_oversized_message_goes_alone_between_batches(
    standalone: StandaloneProcess, client: Any
) -> None:
    topic = topic_name("cp-oversize")
    consumer = subscribe(client, topic)
    async with Client(standalone.service_url) as ours:
        producer = await ours.create_producer(topic, batching_max_bytes=1024)
        small = producer.send_nowait(b"small")
        big = producer.send_nowait(b"B" * 4096)
        after = producer.send_nowait(b"after")
        await producer.flush()
        ids = [await small, await big, await after]
    assert ids[1].batch_index == -1  # unbatched
    assert ids[0].entry < ids[1].entry < ids[2].entry
    assert [m.data() for m in receive_all(consumer, 3)] == [b"small", b"B" * 4096, b"after"]


async def test_sequence_ids_explicit_initial_and_resumed(standalone: StandaloneProcess) -> None:
    topic = topic_name("cp-seq")
    async with Client(standalone.service_url) as ours:
        named = await ours.create_producer(
            topic, producer_name="seq-producer", initial_sequence_id=99, batching_enabled=False
        )
        assert isinstance(named, Producer)
        assert named.producer_name == "seq-producer"
        await named.send(b"a")
        await named.send(b"b")
        assert named.last_sequence_id == 101
        await named.send(b"c", sequence_id=500)
        assert named.last_sequence_id == 500
        await named.close()
        with pytest.raises(ProducerClosed):
            await named.send(b"late")
        fresh = await ours.create_producer(topic, batching_enabled=False)
        assert isinstance(fresh, Producer)
        # Without deduplication the broker reports no last sequence id: start at 0.
        assert fresh.last_sequence_id >= -1
        await fresh.send(b"d")


async def test_queue_full_raises_when_not_blocking(standalone: StandaloneProcess) -> None:
    topic = topic_name("cp-full")
    async with Client(standalone.service_url) as ours:
        producer = await ours.create_producer(
            topic, max_pending_messages=3, block_if_queue_full=False, batching_enabled=False
        )
        futures = [producer.send_nowait(b"x") for _ in range(3)]
        with pytest.raises(ProducerQueueIsFull):
            producer.send_nowait(b"y")
        await asyncio.gather(*futures)
        await producer.send(b"room again")
        blocking = await ours.create_producer(
            topic, max_pending_messages=2, block_if_queue_full=True
        )
        futures = [await blocking.send_async(b"z%d" % i) for i in range(20)]
        assert len({(await f).entry for f in futures}) >= 1


async def test_partition_routing_matches_the_official_client(
    standalone: StandaloneProcess, client: Any
) -> None:
    name = f"cp-parts-{uuid.uuid4().hex[:8]}"
    topic = f"persistent://public/default/{name}"
    admin_call(standalone, "PUT", f"/admin/v2/persistent/public/default/{name}/partitions", 8)
    consumer = subscribe(client, topic)
    keys = [f"user-{i}" for i in range(40)] + ["é", "ключ", "a", "abcdefgh", "x" * 33]
    official = client.create_producer(topic, batching_enabled=False)
    for key in keys:
        official.send(b"official:" + key.encode(), partition_key=key)
    official.close()
    async with Client(standalone.service_url) as ours:
        producer = await ours.create_producer(topic, batching_enabled=False)
        assert isinstance(producer, PartitionedProducer)
        assert producer.num_partitions == 8
        our_ids = {key: await producer.send(b"ours:" + key.encode(), key=key) for key in keys}
        # Unkeyed, unbatched round robin: every partition gets the same share.
        spread = [await producer.send(b"rr") for _ in range(16)]
    assert sorted(i.partition for i in spread) == sorted(list(range(8)) * 2)
    official_partition: dict[str, int] = {}
    our_partition: dict[str, int] = {}
    for message in receive_all(consumer, 2 * len(keys) + 16):
        source, _, key = message.data().decode().partition(":")
        if source == "official":
            official_partition[key] = message.message_id().partition()
        elif source == "ours":
            our_partition[key] = message.message_id().partition()
    assert our_partition == official_partition
    assert {k: i.partition for k, i in our_ids.items()} == official_partition
    for key, partition in official_partition.items():
        assert key_partition(key, 8, HashingScheme.BOOST) == partition


async def test_producer_survives_broker_close(standalone: StandaloneProcess, client: Any) -> None:
    name = f"cp-unload-{uuid.uuid4().hex[:8]}"
    topic = f"persistent://public/default/{name}"
    consumer = subscribe(client, topic)
    async with Client(standalone.service_url) as ours:
        producer = await ours.create_producer(topic, batching_enabled=False)
        await producer.send(b"before")
        # Unload: the broker sends CLOSE_PRODUCER; the producer reattaches by itself.
        unload = f"/admin/v2/persistent/public/default/{name}/unload"
        await asyncio.to_thread(admin_call, standalone, "PUT", unload)
        futures = [producer.send_nowait(b"after-%d" % i) for i in range(10)]
        async with asyncio.timeout(20):
            await asyncio.gather(*futures)
    expected = [b"before"] + [b"after-%d" % i for i in range(10)]
    assert [m.data() for m in receive_all(consumer, 11)] == expected
