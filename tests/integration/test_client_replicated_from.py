"""The client's replicated_from hook: a copy marked with its origin cluster keeps the mark,
its producer name and sequence id (what the geo-replicator and the geo audit rely on)."""

from __future__ import annotations

from magnetar.client.client import Client
from magnetar.protocol.message_id import EARLIEST
from tests.kit.standalone import StandaloneProcess


async def test_a_copy_keeps_its_origin_producer_and_sequence_id(
    standalone: StandaloneProcess, ours: Client
) -> None:
    topic = "persistent://public/default/replicated-from-hook"
    producer = await ours.create_producer(topic, producer_name="origin-producer")
    await producer.send(b"local")  # batched as usual
    await producer.send(b"copy", replicated_from="cluster-a", sequence_id=41)
    await producer.close()
    reader = await ours.create_reader(topic, EARLIEST)
    local = await reader.read_next(timeout_s=10)
    copy = await reader.read_next(timeout_s=10)
    await reader.close()
    assert (local.data, local.replicated_from) == (b"local", None)
    assert (copy.data, copy.replicated_from) == (b"copy", "cluster-a")
    assert (copy.producer_name, copy.sequence_id) == ("origin-producer", 41)
