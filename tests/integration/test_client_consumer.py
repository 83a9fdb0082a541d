"""magnetar.client's Consumer against a real standalone broker, fed by the official client."""

from __future__ import annotations

import asyncio
from typing import Any

import pulsar
import pytest

from magnetar.client.client import Client
from magnetar.client.consumer import Consumer
from magnetar.client.errors import ConsumerBusy, InvalidConfiguration, ReceiveTimeout
from magnetar.protocol.message_id import MessageId
from tests.kit.interop import RECEIVE_TIMEOUT_S as T
from tests.kit.interop import drain, nothing_more, produce
from tests.kit.standalone import topic_name

COMPRESSIONS = [None, "LZ4", "ZLib", "ZSTD", "SNAPPY"]


@pytest.mark.parametrize("batched", [False, True])
@pytest.mark.parametrize("codec", COMPRESSIONS)
async def test_official_messages_arrive_intact(
    ours: Client, client: Any, batched: bool, codec: str | None
) -> None:
    topic = topic_name("interop")
    consumer = await ours.subscribe(topic, "s", initial_position="Earliest")
    compression = getattr(pulsar.CompressionType, codec) if codec else None
    await asyncio.to_thread(produce, client, topic, 20, batched=batched, compression=compression,
                            keyed=True)  # fmt: skip
    got = await drain(consumer, 20)
    assert [m.data for m in got] == [f"m{i}".encode() for i in range(20)]
    assert [m.key for m in got] == [f"k{i % 3}" for i in range(20)]
    assert [m.properties["i"] for m in got] == [str(i) for i in range(20)]
    assert all(m.topic == topic for m in got)
    assert all(m.publish_time_ms > 0 and m.redelivery_count == 0 for m in got)
    if batched:
        assert any(m.message_id.batch_index > 0 for m in got)
    await nothing_more(consumer, 0.2)
    await consumer.close()


async def test_acks_survive_resubscribe_and_cumulative(ours: Client, client: Any) -> None:
    topic = topic_name("acks")
    consumer = await ours.subscribe(topic, "s", initial_position="Earliest")
    await asyncio.to_thread(produce, client, topic, 10)
    got = await drain(consumer, 10, ack=False)
    consumer.acknowledge_cumulative(got[3])  # 0..3
    consumer.acknowledge(got[5])
    consumer.acknowledge(got[8])
    await consumer.close()
    consumer = await ours.subscribe(topic, "s", initial_position="Earliest")
    again = await drain(consumer, 4)
    assert [m.data for m in again] == [b"m4", b"m6", b"m7", b"m9"]
    await nothing_more(consumer)
    await consumer.close()


async def test_exclusive_busy_and_cumulative_not_on_shared(ours: Client) -> None:
    topic = topic_name("busy")
    first = await ours.subscribe(topic, "s")
    with pytest.raises(ConsumerBusy):
        await ours.subscribe(topic, "s")
    shared = await ours.subscribe(topic, "sh", subscription_type="Shared")
    assert isinstance(shared, Consumer)
    with pytest.raises(InvalidConfiguration):
        shared.acknowledge_cumulative(MessageId(0, 0))
    await first.close()
    await shared.close()


async def test_async_iteration_and_unsubscribe(ours: Client, client: Any) -> None:
    topic = topic_name("iter")
    consumer = await ours.subscribe(topic, "s", initial_position="Earliest")
    await asyncio.to_thread(produce, client, topic, 3)
    seen = []
    async with asyncio.timeout(T):
        async for msg in consumer:
            seen.append(msg.data)
            consumer.acknowledge(msg)
            if len(seen) == 3:
                break
    assert seen == [b"m0", b"m1", b"m2"]
    assert consumer.is_connected
    await consumer.unsubscribe()
    assert not consumer.is_connected
    again = await ours.subscribe(topic, "s", initial_position="Earliest")
    assert len(await drain(again, 3)) == 3  # a fresh subscription starts over
    await again.close()


@pytest.mark.parametrize("batched", [False, True])
async def test_batch_receive_and_acknowledge_a_list(
    ours: Client, client: Any, batched: bool
) -> None:
    topic = topic_name("batch-receive")
    consumer = await ours.subscribe(topic, "s", initial_position="Earliest",
                                    receiver_queue_size=10)  # fmt: skip
    await asyncio.to_thread(produce, client, topic, 30, batched=batched)
    got: list[Any] = []
    while len(got) < 30:
        batch = await consumer.batch_receive(max_messages=7, timeout_s=T)
        assert 1 <= len(batch) <= 7
        got += batch
        consumer.acknowledge(batch)
    assert [m.data for m in got] == [f"m{i}".encode() for i in range(30)]
    with pytest.raises(ReceiveTimeout):
        await consumer.batch_receive(timeout_s=0.2)
    await consumer.close()
    consumer = await ours.subscribe(topic, "s", initial_position="Earliest")
    await nothing_more(consumer)  # every list was acknowledged
    await consumer.close()


async def test_multi_topic_batch_receive_and_list_ack(ours: Client, client: Any) -> None:
    topics = [topic_name("batch-multi-a"), topic_name("batch-multi-b")]
    consumer = await ours.subscribe(topics, "s", initial_position="Earliest")
    for t in topics:
        await asyncio.to_thread(produce, client, t, 5, prefix=t[-1])
    got: list[Any] = []
    while len(got) < 10:
        got += await consumer.batch_receive(timeout_s=T)
    consumer.acknowledge(got)
    assert sorted(m.data for m in got) == sorted(f"{t[-1]}{i}".encode() for t in topics
                                                 for i in range(5))  # fmt: skip
    await consumer.close()
    consumer = await ours.subscribe(topics, "s", initial_position="Earliest")
    with pytest.raises(ReceiveTimeout):
        await consumer.receive(0.5)
    await consumer.close()
