"""Readers, seek, last message id, pattern and partitioned subscriptions of magnetar.client."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from magnetar.client.client import Client
from magnetar.client.consumer import Consumer
from magnetar.client.multi_topic import MultiTopicConsumer
from magnetar.protocol.message_id import EARLIEST, LATEST
from tests.kit.interop import RECEIVE_TIMEOUT_S as T
from tests.kit.interop import drain, nothing_more, produce
from tests.kit.standalone import StandaloneProcess, admin_call, topic_name


async def read_all(reader: Any, n: int) -> list[Any]:
    return [await reader.read_next(T) for _ in range(n)]


@pytest.mark.parametrize("batched", [False, True])
async def test_reader_positions_and_has_message_available(
    ours: Client, client: Any, batched: bool
) -> None:
    topic = topic_name("reader")
    await asyncio.to_thread(produce, client, topic, 6, batched=batched)
    earliest = await ours.create_reader(topic, EARLIEST)
    got = await read_all(earliest, 6)
    assert [m.data for m in got] == [f"m{i}".encode() for i in range(6)]
    assert not await earliest.has_message_available()
    ids = [m.message_id for m in got]

    latest = await ours.create_reader(topic, LATEST)
    assert not await latest.has_message_available()
    last_inclusive = await ours.create_reader(topic, LATEST, start_message_id_inclusive=True)
    assert (await last_inclusive.read_next(T)).data == b"m5"

    exclusive = await ours.create_reader(topic, ids[2])
    assert (await exclusive.read_next(T)).data == b"m3"
    inclusive = await ours.create_reader(topic, ids[2], start_message_id_inclusive=True)
    assert await inclusive.has_message_available()
    assert (await inclusive.read_next(T)).data == b"m2"

    await asyncio.to_thread(produce, client, topic, 1, prefix="n")
    assert await latest.has_message_available()
    assert (await latest.read_next(T)).data == b"n0"
    assert (await earliest.read_next(T)).data == b"n0"
    assert not await earliest.has_message_available()
    for r in (earliest, latest, last_inclusive, exclusive, inclusive):
        await r.close()


async def test_seek_by_id_and_time(ours: Client, client: Any) -> None:
    topic = topic_name("seek")
    consumer = await ours.subscribe(topic, "s", initial_position="Earliest")
    assert isinstance(consumer, Consumer)
    await asyncio.to_thread(produce, client, topic, 5)
    got = await drain(consumer, 5)
    assert (await consumer.get_last_message_id()).entry == got[-1].message_id.entry
    await consumer.seek(got[1].message_id)
    assert [m.data for m in await drain(consumer, 4)] == [b"m1", b"m2", b"m3", b"m4"]
    await consumer.seek(got[3].publish_time_ms)
    # the first message published at or after that time (m2 may share m3's millisecond)
    expected = next(m for m in got if m.publish_time_ms >= got[3].publish_time_ms)
    assert (await consumer.receive(T)).data == expected.data
    await consumer.close()

    reader = await ours.create_reader(topic, EARLIEST)
    await read_all(reader, 5)
    await reader.seek(got[2].message_id)
    assert (await reader.read_next(T)).data == b"m2"
    await reader.close()


async def test_pattern_subscription_picks_up_new_topics(ours: Client, client: Any) -> None:
    prefix = f"pat-{uuid.uuid4().hex[:6]}"
    base = f"persistent://public/default/{prefix}"
    await asyncio.to_thread(produce, client, f"{base}-a", 1, prefix="a")
    await asyncio.to_thread(produce, client, f"{base}-b", 1, prefix="b")
    await asyncio.to_thread(produce, client, f"persistent://public/default/x{prefix}", 1)
    consumer = await ours.subscribe(None, "s", topics_pattern=f"{base}-.*",
                                    initial_position="Earliest",
                                    pattern_auto_discovery_period_s=0.3)  # fmt: skip
    assert isinstance(consumer, MultiTopicConsumer)
    assert consumer.topics == [f"{base}-a", f"{base}-b"]
    got = sorted((await drain(consumer, 2)), key=lambda m: m.data)
    assert [(m.data, m.topic) for m in got] == [(b"a0", f"{base}-a"), (b"b0", f"{base}-b")]
    await asyncio.to_thread(produce, client, f"{base}-c", 1, prefix="c")
    msg = await consumer.receive(T)
    assert (msg.data, msg.topic) == (b"c0", f"{base}-c")
    consumer.acknowledge(msg)
    await nothing_more(consumer, 0.3)
    await consumer.close()


async def test_partitioned_topic_one_child_per_partition(
    ours: Client, client: Any, standalone: StandaloneProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = topic_name("parts")
    name = topic.rsplit("/", 1)[1]
    path = f"/admin/v2/persistent/public/default/{name}/partitions"
    await asyncio.to_thread(admin_call, standalone, "PUT", path, 3)
    looked_up: list[str] = []
    real_partitions = ours.lookup.partitions

    async def counted_partitions(name: str) -> int:
        looked_up.append(name)
        return await real_partitions(name)

    monkeypatch.setattr(ours.lookup, "partitions", counted_partitions)
    consumer = await ours.subscribe(topic, "s", initial_position="Earliest",
                                    subscription_type="Shared")  # fmt: skip
    assert isinstance(consumer, MultiTopicConsumer)
    assert looked_up == [topic]  # one partitioned-metadata round trip per subscribe
    assert consumer.topics == [f"{topic}-partition-{i}" for i in range(3)]
    await asyncio.to_thread(produce, client, topic, 12)  # round robin over partitions
    got = await drain(consumer, 12)
    assert sorted(m.data for m in got) == sorted(f"m{i}".encode() for i in range(12))
    assert {m.message_id.partition for m in got} == {0, 1, 2}
    assert all(m.topic.endswith(f"-partition-{m.message_id.partition}") for m in got)
    await nothing_more(consumer, 0.3)
    await consumer.close()
