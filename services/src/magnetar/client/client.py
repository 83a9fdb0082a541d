"""The entry point: :class:`Client` holds the connection pool and lookups, and creates handles.

::

    async with Client("pulsar://127.0.0.1:6650") as client:
        producer = await client.create_producer("my-topic")
        message_id = await producer.send(b"hello", key="k")

A client owns its connections and every producer, consumer and reader created from it
(:meth:`Client.track`); :meth:`Client.close` closes the handles first, then the connections.
Producer and consumer ids are unique per client (the broker keys them per connection, and a
handle keeps its id across reconnects). The handles see the client only through
:class:`~magnetar.client.context.ClientContext`, so this module sits above all of them.

Concurrency: one event loop; create and use a client from coroutines on that loop only.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any

from magnetar.client import multi_topic, partitioned_producer
from magnetar.client.compression import CompressionType
from magnetar.client.consumer import Consumer
from magnetar.client.context import Closable
from magnetar.client.dead_letter import DeadLetterPolicy
from magnetar.client.errors import ClientClosed
from magnetar.client.lookup import LookupService
from magnetar.client.multi_topic import MultiTopicConsumer
from magnetar.client.partitioned_producer import PartitionedProducer
from magnetar.client.pool import ConnectionPool
from magnetar.client.producer import Producer
from magnetar.client.producer_options import ProducerAccessMode, ProducerOptions
from magnetar.client.reader import Reader
from magnetar.client.receiver import (
    ConsumerOptions,
    InitialPosition,
    SubscriptionType,
    parse_initial_position,
    parse_subscription_type,
)
from magnetar.client.routing import HashingScheme, RoutingMode
from magnetar.client.schema import Schema, SchemaInfo
from magnetar.client.settings import Authentication, TlsOptions
from magnetar.naming import full_topic_name
from magnetar.protocol import client_commands
from magnetar.protocol.message_id import MessageId
from magnetar.schema import decode_version, encode_version
from magnetar.telemetry import get_logger

log = get_logger(__name__)


class Client:
    """A Pulsar client bound to one service URL."""

    def __init__(
        self,
        service_url: str = "pulsar://127.0.0.1:6650",
        *,
        operation_timeout_s: float = 30.0,
        connection_timeout_s: float = 10.0,
        keepalive_interval_s: float = 30.0,
        auth: Authentication | None = None,
        tls: TlsOptions | None = None,
        listener_name: str | None = None,
    ) -> None:
        """``listener_name``: the broker's named listener to be told about in lookups
        (Pulsar's advertised listeners; docs/broker-api.md)."""
        self.service_url = service_url
        self.operation_timeout_s = operation_timeout_s
        use_tls = service_url.startswith("pulsar+ssl://")
        if use_tls and tls is None:
            tls = TlsOptions()
        self.pool = ConnectionPool(
            connection_timeout_s=connection_timeout_s,
            operation_timeout_s=operation_timeout_s,
            keepalive_interval_s=keepalive_interval_s,
            auth=auth,
            tls=tls if use_tls else None,
        )
        self.lookup = LookupService(
            self.pool, service_url, use_tls=use_tls, listener_name=listener_name
        )
        self._producer_ids = itertools.count()
        self._consumer_ids = itertools.count()
        self._handles: list[Closable] = []
        self._closed = False

    # ------------------------------------------------------------------ shared services

    def new_producer_id(self) -> int:
        return next(self._producer_ids)

    def new_consumer_id(self) -> int:
        return next(self._consumer_ids)

    def track(self, handle: Closable) -> None:
        """Close ``handle`` with the client."""
        if handle not in self._handles:
            self._handles.append(handle)

    def untrack(self, handle: Closable) -> None:
        if handle in self._handles:
            self._handles.remove(handle)

    @property
    def closed(self) -> bool:
        return self._closed

    def check_open(self) -> None:
        if self._closed:
            raise ClientClosed("the client is closed")

    # ------------------------------------------------------------------ producers

    async def create_producer(
        self,
        topic: str,
        *,
        producer_name: str | None = None,
        initial_sequence_id: int | None = None,
        send_timeout_ms: int = 30_000,
        max_pending_messages: int = 1000,
        block_if_queue_full: bool = True,
        batching_enabled: bool = True,
        batching_max_messages: int = 1000,
        batching_max_bytes: int = 128 * 1024,
        batching_max_publish_delay_ms: int = 10,
        compression_type: CompressionType | int | str | None = CompressionType.NONE,
        routing_mode: RoutingMode | str = RoutingMode.ROUND_ROBIN,
        hashing_scheme: HashingScheme | str = HashingScheme.BOOST,
        message_router: Callable[[str | None, int], int] | None = None,
        properties: Mapping[str, str] | None = None,
        access_mode: ProducerAccessMode | str = ProducerAccessMode.SHARED,
        chunking_enabled: bool = False,
        schema: Schema[Any] | None = None,
    ) -> Producer | PartitionedProducer:
        """A producer for ``topic``; a :class:`PartitionedProducer` when it is partitioned.

        Options follow the official clients (see docs/client.md); ``message_router`` is
        ``(key, num_partitions) -> partition`` and overrides ``routing_mode``.
        ``access_mode``: Pulsar's producer access modes (:class:`ProducerAccessMode`).
        ``chunking_enabled`` (with ``batching_enabled=False``): payloads larger than the
        broker's max message size go as chunks (:mod:`magnetar.client.chunking`).
        ``schema``: declared to the broker (:mod:`magnetar.client.schema`); the application
        encodes values with it (``producer.send(schema.encode(value))``).
        """
        self.check_open()
        options = ProducerOptions(
            producer_name=producer_name,
            initial_sequence_id=initial_sequence_id,
            send_timeout_ms=send_timeout_ms,
            max_pending_messages=max_pending_messages,
            block_if_queue_full=block_if_queue_full,
            batching_enabled=batching_enabled,
            batching_max_messages=batching_max_messages,
            batching_max_bytes=batching_max_bytes,
            batching_max_publish_delay_ms=batching_max_publish_delay_ms,
            compression_type=compression_type,
            routing_mode=routing_mode,
            hashing_scheme=hashing_scheme,
            message_router=message_router,
            properties=dict(properties or {}),
            access_mode=access_mode,
            chunking_enabled=chunking_enabled,
            schema=None if schema is None else schema.info,
        )
        return await partitioned_producer.create_producer(self, topic, options)

    # ------------------------------------------------------------------ consumers and readers

    async def subscribe(
        self,
        topic: str | Sequence[str] | None,
        subscription_name: str,
        *,
        topics_pattern: str | None = None,
        subscription_type: SubscriptionType | str = "Exclusive",
        initial_position: InitialPosition | str = "Latest",
        durable: bool = True,
        consumer_name: str | None = None,
        priority_level: int | None = None,
        receiver_queue_size: int = 1000,
        ack_timeout_s: float = 0.0,
        negative_ack_redelivery_delay_s: float = 60.0,
        ack_grouping_time_s: float = 0.1,
        batch_index_ack_enabled: bool = False,
        dead_letter_policy: DeadLetterPolicy | None = None,
        read_compacted: bool = False,
        properties: Mapping[str, str] | None = None,
        pattern_auto_discovery_period_s: float = 60.0,
        max_pending_chunked_message: int = 10,
        auto_ack_oldest_chunked_message_on_queue_full: bool = False,
        expire_time_of_incomplete_chunked_message_s: float = 60.0,
        schema: Schema[Any] | None = None,
    ) -> Consumer | MultiTopicConsumer:
        """Subscribe to a topic, a list of topics or a regex ``topics_pattern``.

        A :class:`MultiTopicConsumer` for lists, patterns and partitioned topics, else a
        :class:`Consumer`; both receive, acknowledge and close alike (see docs/client.md).
        """
        self.check_open()
        options = ConsumerOptions(
            subscription_type=parse_subscription_type(subscription_type),
            initial_position=parse_initial_position(initial_position),
            durable=durable,
            consumer_name=consumer_name,
            priority_level=priority_level,
            receiver_queue_size=receiver_queue_size,
            ack_timeout_s=ack_timeout_s,
            negative_ack_redelivery_delay_s=negative_ack_redelivery_delay_s,
            ack_grouping_time_s=ack_grouping_time_s,
            batch_index_ack_enabled=batch_index_ack_enabled,
            dead_letter_policy=dead_letter_policy,
            read_compacted=read_compacted,
            properties=dict(properties or {}),
            pattern_auto_discovery_period_s=pattern_auto_discovery_period_s,
            max_pending_chunked_message=max_pending_chunked_message,
            auto_ack_oldest_chunked_message_on_queue_full=auto_ack_oldest_chunked_message_on_queue_full,
            expire_time_of_incomplete_chunked_message_s=expire_time_of_incomplete_chunked_message_s,
            schema=None if schema is None else schema.info,
        )
        return await multi_topic.subscribe(
            self, topic, subscription_name, options, topics_pattern=topics_pattern
        )

    async def create_reader(
        self,
        topic: str,
        start_message_id: MessageId,
        *,
        start_message_id_inclusive: bool = False,
        subscription_name: str | None = None,
        reader_name: str | None = None,
        receiver_queue_size: int = 1000,
        read_compacted: bool = False,
    ) -> Reader:
        """A reader of ``topic`` from ``start_message_id`` (EARLIEST, LATEST or an id)."""
        self.check_open()
        reader = Reader(
            self,
            topic,
            start_message_id,
            start_message_id_inclusive=start_message_id_inclusive,
            subscription_name=subscription_name,
            reader_name=reader_name,
            receiver_queue_size=receiver_queue_size,
            read_compacted=read_compacted,
        )
        await reader.start()
        return reader

    # ------------------------------------------------------------------ schemas

    async def get_schema(self, topic: str, version: int | None = None) -> tuple[SchemaInfo, int]:
        """The topic's latest schema (or one version) and its version, by GET_SCHEMA from the
        topic's owner; TopicNotFound when the topic has none."""
        self.check_open()
        topic = full_topic_name(topic)
        result = await self.lookup.lookup(topic)
        conn = await self.pool.get(result.logical_address, result.physical_address)
        raw = None if version is None else encode_version(version)
        response = await conn.request(
            client_commands.get_schema(conn.new_request_id(), topic, schema_version=raw)
        )
        body = response.get_schema_response
        return SchemaInfo.from_proto(body.schema), decode_version(body.schema_version)

    # ------------------------------------------------------------------ lifecycle

    async def close(self) -> None:
        """Close every tracked handle (in parallel), then every connection; idempotent."""
        if self._closed:
            return
        self._closed = True
        handles, self._handles = list(self._handles), []
        results = await asyncio.gather(*(h.close() for h in handles), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException) and not isinstance(result, Exception):
                raise result
            if isinstance(result, Exception):
                log.warning("client_handle_close_failed", error=repr(result))
        await self.pool.close()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
