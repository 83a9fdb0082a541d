"""The official client produces, ``magnetar.client`` consumes: steps shared by client tests.

Integration tests of our Consumer and Reader feed topics with the official ``pulsar-client``
(what a Pulsar user's producer sends) and read them back with ours. :func:`produce` is
blocking (run it with ``asyncio.to_thread`` from a test's loop); :func:`drain` and
:func:`nothing_more` run on the test's loop. Every receive has a deadline, so a lost message
fails the test in seconds instead of hanging CI. Holds no tests.
"""

from __future__ import annotations

from typing import Any

import pulsar
import pytest

from magnetar.client.consumer import Consumer
from magnetar.client.errors import ReceiveTimeout
from magnetar.client.message import Message
from magnetar.client.multi_topic import MultiTopicConsumer

RECEIVE_TIMEOUT_S = 10.0


def produce(client: pulsar.Client, topic: str, n: int, *, batched: bool = False,
            compression: pulsar.CompressionType | None = None, keyed: bool = False,
            prefix: str = "m") -> None:  # fmt: skip
    """Send ``prefix0..prefix{n-1}`` (property ``i``; keys ``k0..k2`` if ``keyed``), flushed."""
    kwargs: dict[str, Any] = {"batching_enabled": batched}
    if batched:
        kwargs.update(batching_max_messages=n, batching_max_publish_delay_ms=50)
    if compression is not None:
        kwargs["compression_type"] = compression
    producer = client.create_producer(topic, **kwargs)
    for i in range(n):
        props = {"i": str(i)}
        key = f"k{i % 3}" if keyed else None
        if batched:
            producer.send_async(f"{prefix}{i}".encode(), None, properties=props,
                                partition_key=key)  # fmt: skip
        elif key is not None:
            producer.send(f"{prefix}{i}".encode(), properties=props, partition_key=key)
        else:
            producer.send(f"{prefix}{i}".encode(), properties=props)
    producer.flush()
    producer.close()


async def drain(
    consumer: Consumer | MultiTopicConsumer, n: int, *, ack: bool = True
) -> list[Message]:
    """Receive exactly ``n`` messages (each within the deadline), acknowledging them if ``ack``."""
    out = []
    for _ in range(n):
        msg = await consumer.receive(RECEIVE_TIMEOUT_S)
        out.append(msg)
        if ack:
            consumer.acknowledge(msg)
    return out


async def nothing_more(consumer: Consumer | MultiTopicConsumer, wait: float = 0.5) -> None:
    """Fail unless ``consumer`` stays silent for ``wait`` seconds."""
    with pytest.raises(ReceiveTimeout):
        await consumer.receive(wait)
