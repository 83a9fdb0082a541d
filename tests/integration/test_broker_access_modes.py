"""Producer access modes (Pulsar's PIP-68) and the topic epoch, through the official client and
``magnetar.client`` against a real standalone: Exclusive refuses a second producer, Shared is
refused while an exclusive one holds the topic, ExclusiveWithFencing fences the holder for good,
WaitForExclusive is queued until the topic is free, and the epoch survives a restart."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pulsar
import pytest

from magnetar.client import Client, ProducerAccessMode, ProducerBusy, ProducerFenced
from magnetar.client.errors import InvalidConfiguration, OperationTimeout
from tests.kit.standalone import (
    StandaloneProcess,
    admin_call,
    official_client,
    read_from_start,
    topic_name,
)

Mode = pulsar.ProducerAccessMode


def test_exclusive_refuses_a_second_producer_of_any_mode(client: Any) -> None:
    topic = topic_name("am-exclusive")
    holder = client.create_producer(topic, access_mode=Mode.Exclusive)
    with pytest.raises(pulsar.ProducerFenced):
        client.create_producer(topic, access_mode=Mode.Exclusive)
    with pytest.raises(pulsar.ProducerBusy):
        client.create_producer(topic)  # Shared
    holder.send(b"only-me")
    holder.close()
    # Released: a Shared producer may join again, then an Exclusive one is refused.
    shared = client.create_producer(topic)
    with pytest.raises(pulsar.ProducerFenced):
        client.create_producer(topic, access_mode=Mode.Exclusive)
    shared.close()
    assert read_from_start(client, topic) == [b"only-me"]


def test_exclusive_with_fencing_takes_the_topic_for_good(client: Any) -> None:
    topic = topic_name("am-fencing")
    first = client.create_producer(topic, access_mode=Mode.Exclusive, send_timeout_millis=3000)
    first.send(b"from-first")
    second = client.create_producer(topic, access_mode=Mode.ExclusiveWithFencing)
    second.send(b"from-second")
    # The fenced producer reconnects with its older epoch and is fenced for good.
    deadline = time.monotonic() + 10
    while True:
        try:
            first.send(b"too-late")
        except pulsar.ProducerFenced:
            break
        except pulsar.PulsarException:
            pass  # the reconnect may still be under way
        assert time.monotonic() < deadline, "the fenced producer could still publish"
        time.sleep(0.1)
    assert read_from_start(client, topic) == [b"from-first", b"from-second"]


def test_a_fenced_producer_leaves_a_non_persistent_topic(
    client: Any, standalone: StandaloneProcess
) -> None:
    """ExclusiveWithFencing removes the producers it fences from the topic, on the
    non-persistent side as on the persistent one: the stats list the fencing producer only."""
    local = topic_name("am-np").rsplit("/", 1)[1]
    topic = f"non-persistent://public/default/{local}"
    client.create_producer(topic, access_mode=Mode.Exclusive, send_timeout_millis=3000)
    second = client.create_producer(topic, access_mode=Mode.ExclusiveWithFencing)
    stats = admin_call(standalone, "GET", f"/admin/v2/non-persistent/public/default/{local}/stats")
    assert [p["producerName"] for p in stats["publishers"]] == [second.producer_name()]
    second.close()  # the first producer was fenced: the client has closed it already


def test_wait_for_exclusive_is_queued_until_the_topic_is_free(
    client: Any, standalone: StandaloneProcess
) -> None:
    topic = topic_name("am-wait")
    holder = client.create_producer(topic, access_mode=Mode.Exclusive)
    holder.send(b"first")
    created: list[Any] = []
    waiter_client = official_client(standalone, operation_timeout_s=10)
    try:
        thread = threading.Thread(
            target=lambda: created.append(
                waiter_client.create_producer(topic, access_mode=Mode.WaitForExclusive)
            ),
            daemon=True,
        )
        thread.start()
        thread.join(timeout=2)
        assert not created, "WaitForExclusive did not wait"
        assert thread.is_alive()
        holder.close()
        thread.join(timeout=10)
        assert created, "the waiting producer was never granted the topic"
        created[0].send(b"second")
        with pytest.raises(pulsar.ProducerBusy):
            client.create_producer(topic)
        created[0].close()
    finally:
        waiter_client.close()
    assert read_from_start(client, topic) == [b"first", b"second"]


async def test_access_modes_through_magnetar_client(
    ours: Client, standalone: StandaloneProcess
) -> None:
    topic = topic_name("am-ours")
    holder = await ours.create_producer(topic, access_mode="Exclusive", batching_enabled=False)
    with pytest.raises(ProducerFenced):
        await ours.create_producer(topic, access_mode=ProducerAccessMode.EXCLUSIVE)
    # Our client retries ProducerBusy until its operation timeout (a name may be released soon).
    async with Client(standalone.service_url, operation_timeout_s=1) as impatient:
        with pytest.raises(OperationTimeout) as refused:
            await impatient.create_producer(topic)
        assert isinstance(refused.value.__cause__, ProducerBusy)
    first_epoch = holder.topic_epoch  # type: ignore[union-attr]
    assert first_epoch is not None
    waiting = asyncio.ensure_future(
        ours.create_producer(topic, access_mode="WaitForExclusive", batching_enabled=False)
    )
    await asyncio.sleep(1.0)
    assert not waiting.done()
    await holder.close()
    granted = await asyncio.wait_for(waiting, 10)
    assert granted.topic_epoch == first_epoch + 1  # type: ignore[union-attr]
    fencer = await ours.create_producer(topic, access_mode="ExclusiveWithFencing")
    assert fencer.topic_epoch == first_epoch + 2  # type: ignore[union-attr]
    await fencer.close()
    with pytest.raises(InvalidConfiguration):
        await ours.create_producer(topic, access_mode="Sometimes")


def test_topic_epoch_survives_a_restart(client: Any, standalone: StandaloneProcess) -> None:
    """Last in the module: it restarts the module's standalone."""
    topic = topic_name("am-epoch")
    for _ in range(3):  # epochs 0, 1, 2
        client.create_producer(topic, access_mode=Mode.Exclusive).close()
    standalone.stop()
    standalone.start()

    async def epoch_after_restart() -> int | None:
        async with Client(standalone.service_url, operation_timeout_s=10) as ours:
            producer = await ours.create_producer(topic, access_mode="Exclusive")
            epoch = producer.topic_epoch  # type: ignore[union-attr]
            await producer.close()
            return epoch

    assert asyncio.run(epoch_after_restart()) == 3
