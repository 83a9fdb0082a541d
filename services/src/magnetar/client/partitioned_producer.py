"""A producer over a partitioned topic, and the factory that picks the right producer.

:class:`PartitionedProducer` holds one :class:`~magnetar.client.producer.Producer` per partition
and sends each message to the partition its :class:`~magnetar.client.routing.MessageRouter`
chooses (by key hash, else by the routing mode). Ordering holds per partition, as in Pulsar.
:func:`create_producer` asks the broker for the topic's partition count and returns a started
``Producer`` (0 partitions) or ``PartitionedProducer``, tracked by the client.

Called by ``Client.create_producer``. Concurrency: one event loop; the partition producers own
their tasks, and close() closes them all.
"""

from __future__ import annotations

import asyncio
from typing import Unpack

from magnetar.client.batch_builder import ReceiptCallback
from magnetar.client.context import ClientContext
from magnetar.client.producer import Producer
from magnetar.client.producer_options import ProducerOptions, SendOptions
from magnetar.client.reconnect import retry_until
from magnetar.client.routing import MessageRouter
from magnetar.naming import full_topic_name, partition_name
from magnetar.protocol.message_id import MessageId


class PartitionedProducer:
    """One producer per partition, with a router choosing the partition of each message."""

    def __init__(
        self, client: ClientContext, topic: str, num_partitions: int, options: ProducerOptions
    ) -> None:
        self._client = client
        self.topic = full_topic_name(topic)
        self.num_partitions = num_partitions
        self.router = MessageRouter(
            num_partitions,
            mode=options.routing_mode,
            hashing_scheme=options.hashing_scheme,
            batching_enabled=options.batching_enabled,
            batching_max_messages=options.batching_max_messages,
            batching_max_bytes=options.batching_max_bytes,
            batching_max_publish_delay_ms=options.batching_max_publish_delay_ms,
            custom=options.message_router,
        )
        self.producers = [
            Producer(client, partition_name(self.topic, i), options, partition=i)
            for i in range(num_partitions)
        ]

    async def start(self) -> None:
        results = await asyncio.gather(*(p.start() for p in self.producers), return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            await asyncio.gather(*(p.close() for p in self.producers), return_exceptions=True)
            raise errors[0]

    @property
    def producer_name(self) -> str:
        return self.producers[0].producer_name

    @property
    def last_sequence_id(self) -> int:
        return max(p.last_sequence_id for p in self.producers)

    def _route(self, data: bytes, options: SendOptions) -> Producer:
        key = options.get("key")
        chosen = key if key is not None else options.get("partition_key")
        return self.producers[self.router.choose(chosen, len(data))]

    async def send(
        self,
        data: bytes,
        **options: Unpack[SendOptions],
    ) -> MessageId:
        return await self._route(data, options).send(data, **options)

    async def send_async(
        self,
        data: bytes,
        **options: Unpack[SendOptions],
    ) -> asyncio.Future[MessageId]:
        return await self._route(data, options).send_async(data, **options)

    def send_nowait(
        self,
        data: bytes,
        **options: Unpack[SendOptions],
    ) -> asyncio.Future[MessageId]:
        return self._route(data, options).send_nowait(data, **options)

    async def send_callback(
        self,
        data: bytes,
        callback: ReceiptCallback,
        context: object = None,
        **options: Unpack[SendOptions],
    ) -> None:
        await self._route(data, options).send_callback(data, callback, context, **options)

    async def flush(self) -> None:
        await asyncio.gather(*(p.flush() for p in self.producers))

    async def close(self) -> None:
        await asyncio.gather(*(p.close() for p in self.producers), return_exceptions=True)
        self._client.untrack(self)


async def create_producer(
    client: ClientContext, topic: str, options: ProducerOptions
) -> Producer | PartitionedProducer:
    """A started producer for ``topic``, partitioned when the broker says it has partitions."""
    options.validate()
    topic = full_topic_name(topic)
    partitions = await retry_until(
        lambda: client.lookup.partitions(topic),
        timeout_s=client.operation_timeout_s,
        what=f"partitioned metadata of {topic}",
    )
    handle: Producer | PartitionedProducer
    if partitions > 0:
        handle = PartitionedProducer(client, topic, partitions, options)
    else:
        handle = Producer(client, topic, options)
    await handle.start()
    client.track(handle)
    return handle
