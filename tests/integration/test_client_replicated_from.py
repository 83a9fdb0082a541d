"""A copy stored as the geo-replicator stores it (``Producer.send_entry``) keeps its origin
cluster, producer name and sequence id, and readers see them (what the geo audit relies on)."""

from __future__ import annotations

from magnetar.client.client import Client
from magnetar.protocol.message_id import EARLIEST
from tests.kit.geo import send_copy
from tests.kit.standalone import StandaloneProcess


async def test_a_copy_keeps_its_origin_producer_and_sequence_id(
    standalone: StandaloneProcess, ours: Client
) -> None:
    topic = "persistent://public/default/replicated-from-hook"
    producer = await ours.create_producer(topic, producer_name="pulsar.repl.here")
    await producer.send(b"local")  # batched as usual
    await send_copy(
        producer, b"copy", origin="cluster-a", producer_name="origin-producer", sequence_id=41
    )
    await producer.close()
    reader = await ours.create_reader(topic, EARLIEST)
    local = await reader.read_next(timeout_s=10)
    copy = await reader.read_next(timeout_s=10)
    await reader.close()
    assert (local.data, local.replicated_from, local.producer_name) == (
        b"local",
        None,
        "pulsar.repl.here",
    )
    assert (copy.data, copy.replicated_from) == (b"copy", "cluster-a")
    assert (copy.producer_name, copy.sequence_id) == ("origin-producer", 41)
