"""A magnetar.client Consumer survives a broker crash (kill -9) and restart, and carries on."""

from __future__ import annotations

import asyncio

import pulsar

from magnetar.client.client import Client
from magnetar.client.consumer import Consumer
from magnetar.protocol.message_id import EARLIEST
from tests.kit.interop import RECEIVE_TIMEOUT_S as T
from tests.kit.interop import produce
from tests.kit.standalone import StandaloneProcess, topic_name


def official_produce(url: str, topic: str, n: int, prefix: str) -> None:
    c = pulsar.Client(url, operation_timeout_seconds=10,
                      logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))  # fmt: skip
    try:
        produce(c, topic, n, prefix=prefix)
    finally:
        c.close()


async def test_consumer_carries_on_after_kill_and_restart(
    durable_standalone: StandaloneProcess,
) -> None:
    sa = durable_standalone
    topic = topic_name("restart")
    async with Client(sa.service_url, operation_timeout_s=10) as ours:
        consumer = await ours.subscribe(topic, "s", initial_position="Earliest",
                                        ack_grouping_time_s=0)  # fmt: skip
        assert isinstance(consumer, Consumer)
        # a subscription that never acks keeps the ledger (no retention: consumed ledgers go)
        await (await ours.subscribe(topic, "hold", initial_position="Earliest")).close()
        await asyncio.to_thread(official_produce, sa.service_url, topic, 10, "m")
        for i in range(5):
            msg = await consumer.receive(T)
            assert msg.data == f"m{i}".encode()
            consumer.acknowledge(msg)
        await asyncio.sleep(0.3)  # let the acks reach the broker's journal
        reader = await ours.create_reader(topic, EARLIEST)
        assert [(await reader.read_next(T)).data for _ in range(3)] == [b"m0", b"m1", b"m2"]

        await asyncio.to_thread(sa.kill)
        async with asyncio.timeout(T):
            while consumer.is_connected:  # noqa: ASYNC110 - observed from the outside
                await asyncio.sleep(0.05)
        await asyncio.to_thread(sa.start)

        seen: list[bytes] = []
        async with asyncio.timeout(30):
            while b"m9" not in seen:
                msg = await consumer.receive(30)
                seen.append(msg.data)
                consumer.acknowledge(msg)
        assert consumer.is_connected
        # the unacknowledged half arrives in order (acked ones may repeat: at-least-once)
        rest = [d for d in seen if d not in {f"m{i}".encode() for i in range(5)}]
        assert rest == [f"m{i}".encode() for i in range(5, 10)]
        # the reader's non-durable subscription died with the broker: it resumes after m2
        assert (await reader.read_next(30)).data == b"m3"

        await asyncio.to_thread(official_produce, sa.service_url, topic, 3, "n")
        after = [(await consumer.receive(T)).data for _ in range(3)]
        assert after == [b"n0", b"n1", b"n2"]
        await consumer.close()
        await reader.close()
