"""Subscription types, batch-index acks, negative acks and the dead-letter topic, end to end.

Our Consumer on a real standalone broker; the official client produces.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from magnetar.client.client import Client
from magnetar.client.consumer import Consumer
from magnetar.client.dead_letter import DeadLetterPolicy
from magnetar.client.errors import ReceiveTimeout
from tests.kit.interop import RECEIVE_TIMEOUT_S as T
from tests.kit.interop import drain, nothing_more, produce
from tests.kit.standalone import topic_name


async def wait_until(condition: Any, timeout_s: float = T) -> None:
    async with asyncio.timeout(timeout_s):
        while not condition():  # noqa: ASYNC110 - a consumer's state, polled briefly
            await asyncio.sleep(0.02)


async def test_failover_active_consumer_takes_over(ours: Client, client: Any) -> None:
    topic = topic_name("failover")
    first = await ours.subscribe(topic, "f", subscription_type="Failover", consumer_name="a")
    second = await ours.subscribe(topic, "f", subscription_type="Failover", consumer_name="b")
    assert isinstance(first, Consumer)
    assert isinstance(second, Consumer)
    await wait_until(lambda: first.is_active is not None and second.is_active is not None)
    active, standby = (first, second) if first.is_active else (second, first)
    assert standby.is_active is False
    await asyncio.to_thread(produce, client, topic, 5)
    assert [m.data for m in await drain(active, 5)] == [f"m{i}".encode() for i in range(5)]
    await nothing_more(standby, 0.2)
    await active.close()
    await wait_until(lambda: standby.is_active is True)
    await asyncio.to_thread(produce, client, topic, 3, prefix="n")
    assert [m.data for m in await drain(standby, 3)] == [b"n0", b"n1", b"n2"]
    await standby.close()


async def test_shared_distributes_and_key_shared_keeps_keys(ours: Client, client: Any) -> None:
    topic = topic_name("shared")
    shared = [
        await ours.subscribe(topic, "sh", subscription_type="Shared", receiver_queue_size=4)
        for _ in range(2)
    ]
    keyed = [await ours.subscribe(topic, "ks", subscription_type="Key_Shared") for _ in range(2)]
    await asyncio.to_thread(produce, client, topic, 30, keyed=True)

    async def collect(consumers: list[Any]) -> list[list[Any]]:
        got: list[list[Any]] = [[] for _ in consumers]
        async with asyncio.timeout(T):
            while sum(map(len, got)) < 30:
                for i, c in enumerate(consumers):
                    msg = c.poll()
                    if msg is not None:
                        got[i].append(msg)
                        c.acknowledge(msg)
                await asyncio.sleep(0.01)
        return got

    per_shared = await collect(shared)
    assert all(per_shared), "both shared consumers get messages"
    assert sorted(m.data for g in per_shared for m in g) == sorted(
        f"m{i}".encode() for i in range(30)
    )
    per_key = await collect(keyed)
    keys = [{m.key for m in g} for g in per_key]
    assert not keys[0] & keys[1], "a key goes to one Key_Shared consumer"
    for g in per_key:  # per-key order holds
        for key in {m.key for m in g}:
            seq = [int(m.data[1:]) for m in g if m.key == key]
            assert seq == sorted(seq)
    for c in shared + keyed:
        await c.close()


@pytest.mark.parametrize("batch_index_ack", [True, False])
async def test_batch_index_ack(ours: Client, client: Any, batch_index_ack: bool) -> None:
    topic = topic_name("bia")
    consumer = await ours.subscribe(topic, "s", initial_position="Earliest",
                                    batch_index_ack_enabled=batch_index_ack)  # fmt: skip
    await asyncio.to_thread(produce, client, topic, 10, batched=True)
    got = await drain(consumer, 10, ack=False)
    assert {m.message_id.entry for m in got} == {got[0].message_id.entry}, "one batch"
    for m in got[:6]:
        consumer.acknowledge(m)
    await consumer.close()
    consumer = await ours.subscribe(topic, "s", initial_position="Earliest",
                                    batch_index_ack_enabled=batch_index_ack)  # fmt: skip
    again = await drain(consumer, 4 if batch_index_ack else 10, ack=True)
    expected = range(6, 10) if batch_index_ack else range(10)
    assert [m.data for m in again] == [f"m{i}".encode() for i in expected]
    await consumer.close()
    consumer = await ours.subscribe(topic, "s", initial_position="Earliest")
    await nothing_more(consumer)  # the whole batch is acknowledged now
    await consumer.close()


@pytest.mark.parametrize("sub_type", ["Shared", "Exclusive"])
async def test_negative_ack_redelivers_with_count(ours: Client, client: Any, sub_type: str) -> None:
    topic = topic_name("nack")
    consumer = await ours.subscribe(topic, "s", subscription_type=sub_type,
                                    initial_position="Earliest",
                                    negative_ack_redelivery_delay_s=0.2)  # fmt: skip
    await asyncio.to_thread(produce, client, topic, 3)
    first = await drain(consumer, 3, ack=False)
    consumer.acknowledge(first[0])
    consumer.acknowledge(first[2])
    consumer.negative_acknowledge(first[1])
    again = await consumer.receive(T)
    assert (again.data, again.redelivery_count) == (b"m1", 1)
    consumer.negative_acknowledge(again)
    third = await consumer.receive(T)
    assert (third.data, third.redelivery_count) == (b"m1", 2)
    consumer.acknowledge(third)
    await nothing_more(consumer)
    await consumer.close()


async def test_ack_timeout_redelivers(ours: Client, client: Any) -> None:
    topic = topic_name("ackto")
    consumer = await ours.subscribe(topic, "s", subscription_type="Shared",
                                    initial_position="Earliest", ack_timeout_s=0.5)  # fmt: skip
    await asyncio.to_thread(produce, client, topic, 1)
    first = await consumer.receive(T)
    again = await consumer.receive(T)
    assert again.data == first.data
    assert again.redelivery_count == 1
    consumer.acknowledge(again)
    await nothing_more(consumer, 1.0)
    await consumer.close()


async def test_dead_letter_topic_after_max_redeliveries(ours: Client, client: Any) -> None:
    topic = topic_name("dlq")
    consumer = await ours.subscribe(
        topic, "s", subscription_type="Shared", initial_position="Earliest",
        negative_ack_redelivery_delay_s=0.1,
        dead_letter_policy=DeadLetterPolicy(max_redeliver_count=2),
    )  # fmt: skip
    await asyncio.to_thread(produce, client, topic, 2)
    counts = []
    async with asyncio.timeout(T):
        while True:
            try:
                msg = await consumer.receive(1.5)
            except ReceiveTimeout:
                break
            if msg.data == b"m0":
                consumer.acknowledge(msg)
                continue
            counts.append(msg.redelivery_count)
            consumer.negative_acknowledge(msg)
    assert counts == [0, 1, 2]
    dlq = await ours.subscribe(f"{topic}-s-DLQ", "check", initial_position="Earliest")
    dead = await dlq.receive(T)
    assert dead.data == b"m1"
    assert dead.properties["REAL_TOPIC"] == topic
    assert dead.properties["i"] == "1"
    await consumer.close()
    consumer = await ours.subscribe(topic, "s", subscription_type="Shared")
    await nothing_more(consumer)  # acknowledged on the original subscription
    await consumer.close()
    await dlq.close()
