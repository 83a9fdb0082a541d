"""Wire compatibility of magnetar.protocol with the OFFICIAL pulsar-client (C++ based).

A tiny asyncio TCP server in this file speaks only through our codec (FrameDecoder, the
encoders, commands.*). The official client connects to it, and we check what a user of the
client observes: the partition names it returns, the message id send() returns — and, on our
side, that the client's CONNECT, SEND, checksums and batches decode as the protocol says.

The client's calls block, so they run in a worker thread; every wait has a timeout and the
client uses short operation timeouts, so a protocol bug fails fast instead of hanging.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pulsar
import pytest

from magnetar.protocol import commands
from magnetar.protocol.batch import is_batch, parse_batch
from magnetar.protocol.frame import Frame, FrameDecoder, encode_command, encode_message
from magnetar.protocol.message_id import MessageId
from magnetar.protocol.version import negotiate_protocol_version
from magnetar.wire import pulsar_api_pb2 as pb

T = pb.BaseCommand
LEDGER_ID = 4242
CLIENT_TIMEOUT_S = 20.0
R = TypeVar("R")


@dataclass
class FakeBroker:
    """Answers just enough of the protocol for partition metadata, lookup and produce."""

    partitions: dict[str, int] = field(default_factory=dict)
    received: list[Frame] = field(default_factory=list)
    port: int = 0
    next_entry_id: int = 0
    errors: list[BaseException] = field(default_factory=list)
    # Entries as a broker stores them: the bytes after the SEND command, unchanged.
    entries: list[tuple[MessageId, bytes]] = field(default_factory=list)
    broker_entry_metadata: bool = False
    namespace_topics: list[str] = field(default_factory=list)

    def of_type(self, type_: int) -> list[Frame]:
        return [f for f in self.received if f.command.type == type_]

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        decoder = FrameDecoder()
        try:
            while data := await reader.read(65536):
                decoder.feed(data)
                for frame in decoder.frames():
                    self.received.append(frame)
                    for reply in self.answer(frame):
                        writer.write(reply)
                await writer.drain()
        except Exception as exc:  # recorded and asserted on by the test
            self.errors.append(exc)
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def answer(self, frame: Frame) -> list[bytes]:
        cmd = frame.command
        if cmd.type == T.CONNECT:
            version = negotiate_protocol_version(cmd.connect.protocol_version)
            reply = commands.connected(
                server_version="Magnetar-test",
                protocol_version=version,
                max_message_size=5 * 1024 * 1024,
            )
        elif cmd.type == T.PARTITIONED_METADATA:
            request = cmd.partition_metadata
            reply = commands.partitioned_metadata_response(
                request.request_id, self.partitions.get(request.topic, 0)
            )
        elif cmd.type == T.LOOKUP:
            reply = commands.lookup_response(
                cmd.lookup_topic.request_id,
                broker_service_url=f"pulsar://127.0.0.1:{self.port}",
                broker_service_url_tls=f"pulsar+ssl://127.0.0.1:{self.port}",
            )
        elif cmd.type == T.PRODUCER:
            request = cmd.producer
            reply = commands.producer_success(
                request.request_id, request.producer_name or "magnetar-test-producer"
            )
        elif cmd.type == T.SEND:
            message_id = MessageId(LEDGER_ID, self.next_entry_id)
            self.next_entry_id += 1
            assert frame.payload is not None
            self.entries.append((message_id, frame.payload.stored))
            reply = commands.send_receipt(cmd.send.producer_id, cmd.send.sequence_id, message_id)
        elif cmd.type == T.SUBSCRIBE:
            reply = commands.success(cmd.subscribe.request_id)
        elif cmd.type in (T.SEEK, T.UNSUBSCRIBE):
            body = cmd.seek if cmd.type == T.SEEK else cmd.unsubscribe
            reply = commands.success(body.request_id)
        elif cmd.type == T.GET_LAST_MESSAGE_ID:
            reply = commands.get_last_message_id_response(
                cmd.get_last_message_id.request_id,
                MessageId(LEDGER_ID, 41),
                mark_delete_position=MessageId(LEDGER_ID, 40),
            )
        elif cmd.type == T.GET_TOPICS_OF_NAMESPACE:
            reply = commands.get_topics_of_namespace_response(
                cmd.get_topics_of_namespace.request_id, self.namespace_topics
            )
        elif cmd.type == T.FLOW:
            return [self.deliver(cmd.flow.consumer_id, i) for i in range(len(self.entries))]
        elif cmd.type in (T.CLOSE_PRODUCER, T.CLOSE_CONSUMER):
            request_id = (
                cmd.close_producer.request_id
                if cmd.type == T.CLOSE_PRODUCER
                else cmd.close_consumer.request_id
            )
            reply = commands.success(request_id)
        elif cmd.type == T.PING:
            reply = commands.pong()
        else:
            return []
        return [encode_command(reply)]

    def deliver(self, consumer_id: int, index: int) -> bytes:
        message_id, stored = self.entries[index]
        bem = None
        if self.broker_entry_metadata:
            bem = pb.BrokerEntryMetadata(broker_timestamp=1_700_000_000_000, index=index)
        return encode_message(
            commands.message(consumer_id, message_id), stored, broker_entry_metadata=bem
        )


@contextlib.asynccontextmanager
async def running(broker: FakeBroker) -> AsyncIterator[FakeBroker]:
    server = await asyncio.start_server(broker.handle, "127.0.0.1", 0)
    broker.port = server.sockets[0].getsockname()[1]
    try:
        yield broker
    finally:
        server.close()
        await asyncio.wait_for(server.wait_closed(), timeout=10)


def with_client(port: int, action: Callable[[Any], R]) -> R:
    """Run ``action(client)`` with a fresh official client, always closing it."""
    client = pulsar.Client(
        f"pulsar://127.0.0.1:{port}",
        operation_timeout_seconds=5,
        connection_timeout_ms=5000,
    )
    try:
        return action(client)
    finally:
        client.close()


async def in_thread(fn: Callable[[], R]) -> R:
    return await asyncio.wait_for(asyncio.to_thread(fn), timeout=CLIENT_TIMEOUT_S)


async def test_partition_metadata_from_official_client() -> None:
    topic = "persistent://public/default/t"
    async with running(FakeBroker(partitions={topic: 3})) as broker:
        names = await in_thread(
            lambda: with_client(broker.port, lambda c: c.get_topic_partitions(topic))
        )
    assert names == [f"{topic}-partition-{i}" for i in range(3)]
    assert not broker.errors
    connect = broker.of_type(T.CONNECT)[0].command.connect
    assert connect.client_version.startswith("Pulsar-CPP")
    assert connect.protocol_version >= 19
    assert connect.feature_flags.supports_broker_entry_metadata
    request = broker.of_type(T.PARTITIONED_METADATA)[0].command.partition_metadata
    assert request.topic == topic


async def test_produce_from_official_client() -> None:
    topic = "persistent://public/default/produce"

    def produce(client: Any) -> list[Any]:
        producer = client.create_producer(topic, batching_enabled=False, send_timeout_millis=5000)
        ids = [producer.send(b"hello-magnetar"), producer.send(b"second")]
        producer.close()
        return ids

    async with running(FakeBroker()) as broker:
        ids = await in_thread(lambda: with_client(broker.port, produce))

    assert not broker.errors
    assert [(m.ledger_id(), m.entry_id()) for m in ids] == [(LEDGER_ID, 0), (LEDGER_ID, 1)]
    assert broker.of_type(T.LOOKUP)[0].command.lookup_topic.topic == topic
    assert broker.of_type(T.PRODUCER)[0].command.producer.topic == topic
    sends = broker.of_type(T.SEND)
    assert [f.payload.payload for f in sends if f.payload] == [b"hello-magnetar", b"second"]
    first = sends[0].payload
    assert first is not None
    # The client adds a CRC32-C (we said protocol >= 6) and our decoder verified it.
    assert first.checksum is not None
    assert first.stored[:2] == b"\x0e\x01"
    assert first.metadata.sequence_id == sends[0].command.send.sequence_id
    assert not is_batch(first.metadata)
    assert broker.of_type(T.CLOSE_PRODUCER)


async def test_batched_produce_from_official_client() -> None:
    topic = "persistent://public/default/batched"
    payloads = [b"one", b"two", b"three"]

    def produce(client: Any) -> list[Any]:
        producer = client.create_producer(
            topic,
            batching_enabled=True,
            batching_max_messages=len(payloads),
            batching_max_publish_delay_ms=1000,
            send_timeout_millis=5000,
        )
        results: list[Any] = []
        for payload in payloads:
            producer.send_async(payload, lambda res, msg_id: results.append((res, msg_id)))
        producer.flush()
        producer.close()
        return results

    async with running(FakeBroker()) as broker:
        results = await in_thread(lambda: with_client(broker.port, produce))

    assert not broker.errors
    assert len(results) == len(payloads)
    assert all(res == pulsar.Result.Ok for res, _ in results)
    assert sorted(m.batch_index() for _, m in results) == [0, 1, 2]
    assert {(m.ledger_id(), m.entry_id()) for _, m in results} == {(LEDGER_ID, 0)}
    (send,) = broker.of_type(T.SEND)
    assert send.payload is not None
    metadata = send.payload.metadata
    assert is_batch(metadata)
    assert metadata.num_messages_in_batch == len(payloads)
    assert send.command.send.num_messages == len(payloads)
    items = parse_batch(send.payload.payload, metadata.num_messages_in_batch)
    assert [item.payload for item in items] == payloads


@pytest.mark.parametrize("broker_entry_metadata", [False, True])
async def test_consume_replayed_entries_with_official_client(broker_entry_metadata: bool) -> None:
    """Entries stored as the SEND bytes and replayed in MESSAGE reach the official consumer."""
    topic = "persistent://public/default/consume"

    def produce_then_consume(client: Any) -> list[tuple[bytes, int, int, int]]:
        producer = client.create_producer(topic, batching_enabled=False, send_timeout_millis=5000)
        producer.send(b"single")
        batched = client.create_producer(
            topic,
            batching_enabled=True,
            batching_max_messages=2,
            batching_max_publish_delay_ms=1000,
            send_timeout_millis=5000,
        )
        batched.send_async(b"b0", lambda *_: None)
        batched.send_async(b"b1", lambda *_: None)
        batched.flush()
        consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
        got = []
        for _ in range(3):
            msg = consumer.receive(timeout_millis=5000)
            mid = msg.message_id()
            got.append((msg.data(), mid.ledger_id(), mid.entry_id(), mid.batch_index()))
            consumer.acknowledge(msg)
        consumer.close()
        return got

    broker = FakeBroker(broker_entry_metadata=broker_entry_metadata)
    async with running(broker):
        got = await in_thread(lambda: with_client(broker.port, produce_then_consume))

    assert not broker.errors
    assert got == [
        (b"single", LEDGER_ID, 0, -1),
        (b"b0", LEDGER_ID, 1, 0),
        (b"b1", LEDGER_ID, 1, 1),
    ]
    assert broker.of_type(T.FLOW)[0].command.flow.message_permits > 0
    acked = {
        (MessageId.from_proto(m).ledger_id, MessageId.from_proto(m).entry_id)
        for f in broker.of_type(T.ACK)
        for m in f.command.ack.message_id
    }
    assert acked == {(LEDGER_ID, 0), (LEDGER_ID, 1)}
    assert broker.of_type(T.CLOSE_CONSUMER)


async def test_consumer_requests_from_official_client() -> None:
    """GET_LAST_MESSAGE_ID, SEEK, UNSUBSCRIBE and a regex subscription's namespace listing."""
    topic = "persistent://public/default/requests"

    def requests(client: Any) -> tuple[tuple[int, int], str]:
        consumer = client.subscribe(topic, "sub")
        last = consumer.get_last_message_id()
        consumer.seek(pulsar.MessageId.earliest)
        consumer.unsubscribe()
        pattern = client.subscribe(re.compile("persistent://public/default/req.*"), "regex-sub")
        topic_name = pattern.topic()
        pattern.close()
        return (last.ledger_id(), last.entry_id()), topic_name

    broker = FakeBroker(namespace_topics=[topic, "persistent://public/default/other"])
    async with running(broker):
        last, _ = await in_thread(lambda: with_client(broker.port, requests))

    assert not broker.errors
    assert last == (LEDGER_ID, 41)
    seek = broker.of_type(T.SEEK)[0].command.seek
    assert MessageId.from_proto(seek.message_id).entry == (-1, -1)  # earliest, sent as uint64
    assert broker.of_type(T.UNSUBSCRIBE)
    listing = broker.of_type(T.GET_TOPICS_OF_NAMESPACE)[0].command.get_topics_of_namespace
    assert listing.namespace == "public/default"
    # The regex consumer subscribed to the matching topic only.
    subscribed = [f.command.subscribe for f in broker.of_type(T.SUBSCRIBE)]
    assert [s.topic for s in subscribed if s.subscription == "regex-sub"] == [topic]
