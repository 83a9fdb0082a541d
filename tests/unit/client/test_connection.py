"""Connection vs a scripted loopback broker: handshake, request ids, errors, keep-alive, dispatch.

:class:`FakeBroker` (``fake_broker.py``) scripts each answer through the real codec.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from magnetar.client.connection import Connection
from magnetar.client.errors import (
    ConnectionFailed,
    ConnectionLost,
    OperationTimeout,
    ServiceNotReady,
    TopicNotFound,
)
from magnetar.protocol import commands
from magnetar.protocol.envelope import wrap
from magnetar.protocol.frame import Frame, encode_payload_command
from magnetar.protocol.hand_decoded import Delivery
from magnetar.wire import pulsar_api_pb2 as pb
from tests.unit.client.fake_broker import FakeBroker

T = pb.BaseCommand


async def open_to(broker: FakeBroker, **kw: Any) -> Connection:
    return await Connection.open(broker.address, connection_timeout_s=2, **kw)


async def test_handshake_negotiates_version_and_limits() -> None:
    async with FakeBroker(max_message_size=1234) as broker:
        conn = await open_to(broker)
        assert conn.server_version == "fake-1"
        assert conn.protocol_version == 19
        assert conn.max_message_size == 1234
        assert conn.checksum
        assert conn.is_open
        await conn.close()
        assert not conn.is_open


async def test_handshake_error_and_refused_connection() -> None:
    async with FakeBroker() as broker:
        broker.connect_error = pb.ServiceNotReady
        with pytest.raises(ServiceNotReady):
            await open_to(broker)
        address = broker.address
    with pytest.raises(ConnectionFailed):
        await Connection.open(address, connection_timeout_s=1)


async def test_responses_match_requests_by_id_in_any_order() -> None:
    held: list[Frame] = []

    def handler(broker: FakeBroker, frame: Frame) -> None:
        held.append(frame)
        if len(held) == 2:  # answer the second request first
            for f in reversed(held):
                rid = f.command.partition_metadata.request_id
                body = pb.CommandPartitionedTopicMetadataResponse(
                    request_id=rid,
                    partitions=rid + 10,
                    response=pb.CommandPartitionedTopicMetadataResponse.Success,
                )
                broker.send(wrap(T.PARTITIONED_METADATA_RESPONSE, body))

    async with FakeBroker(handler) as broker:
        conn = await open_to(broker)
        a, b = conn.new_request_id(), conn.new_request_id()
        ra, rb = await asyncio.gather(
            conn.request(commands.partitioned_metadata("persistent://p/n/a", a)),
            conn.request(commands.partitioned_metadata("persistent://p/n/b", b)),
        )
        assert ra.partition_metadata_response.partitions == a + 10
        assert rb.partition_metadata_response.partitions == b + 10
        await conn.close()


async def test_errors_map_to_classes_and_timeouts_raise() -> None:
    def handler(broker: FakeBroker, frame: Frame) -> None:
        command = frame.command
        if command.type == T.LOOKUP:
            body = pb.CommandLookupTopicResponse(
                request_id=command.lookup_topic.request_id,
                response=pb.CommandLookupTopicResponse.Failed,
                error=pb.TopicNotFound,
                message="missing",
            )
            broker.send(wrap(T.LOOKUP_RESPONSE, body))
        elif command.type == T.GET_TOPICS_OF_NAMESPACE:
            body2 = pb.CommandError(
                request_id=command.get_topics_of_namespace.request_id,
                error=pb.ServiceNotReady,
                message="later",
            )
            broker.send(wrap(T.ERROR, body2))
        # PARTITIONED_METADATA: never answered

    async with FakeBroker(handler) as broker:
        conn = await open_to(broker)
        with pytest.raises(TopicNotFound) as missing:
            await conn.request(commands.lookup("persistent://p/n/t", conn.new_request_id()))
        assert missing.value.server_message == "missing"
        assert not missing.value.retryable
        with pytest.raises(ServiceNotReady) as later:
            await conn.request(commands.get_topics_of_namespace(conn.new_request_id(), "p/n"))
        assert later.value.retryable
        with pytest.raises(OperationTimeout):
            await conn.request(
                commands.partitioned_metadata("persistent://p/n/t", conn.new_request_id()),
                timeout_s=0.2,
            )
        await conn.close()


class Recorder:
    """Records every handler callback (a producer and consumer handler at once)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []
        self.lost = asyncio.Event()

    def on_send_receipt(self, sequence_id: int, ledger_id: int, entry_id: int) -> None:
        self.events.append(("receipt", (sequence_id, ledger_id, entry_id)))

    def on_send_error(self, error: pb.CommandSendError) -> None:
        self.events.append(("send_error", error.error))

    def on_broker_close(self) -> None:
        self.events.append(("broker_close", None))

    def on_connection_lost(self, error: BaseException) -> None:
        self.events.append(("lost", type(error).__name__))
        self.lost.set()

    def on_message(self, delivery: Delivery, metadata: pb.MessageMetadata, payload: bytes) -> None:
        self.events.append(("message", (delivery.consumer_id, delivery.entry_id, payload)))

    def on_active_consumer_change(self, is_active: bool) -> None:
        self.events.append(("active", is_active))

    def on_reached_end_of_topic(self) -> None:
        self.events.append(("end", None))


async def test_dispatch_to_handlers_and_ping_answered() -> None:
    async with FakeBroker() as broker:
        conn = await open_to(broker)
        producer, consumer = Recorder(), Recorder()
        conn.register_producer(3, producer)
        conn.register_consumer(4, consumer)
        receipt = pb.CommandSendReceipt(
            producer_id=3, sequence_id=9, message_id=pb.MessageIdData(ledger_id=1, entry_id=2)
        )
        broker.send(wrap(T.SEND_RECEIPT, receipt))
        broker.send(wrap(T.SEND_RECEIPT, pb.CommandSendReceipt(producer_id=99, sequence_id=1)))
        # Without a message id the scan leaves the receipt to protobuf: the same call.
        broker.send(wrap(T.SEND_RECEIPT, pb.CommandSendReceipt(producer_id=3, sequence_id=10)))
        message = wrap(
            T.MESSAGE,
            pb.CommandMessage(consumer_id=4, message_id=pb.MessageIdData(ledger_id=1, entry_id=2)),
        )
        metadata = pb.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1)
        assert broker.writer is not None
        broker.writer.write(encode_payload_command(message, metadata, b"body"))
        # An id with a batch index: the scan leaves the MESSAGE to protobuf, the same call.
        message.message.message_id.entry_id = 3
        message.message.message_id.batch_index = 0
        broker.writer.write(encode_payload_command(message, metadata, b"other"))
        broker.send(wrap(T.ACTIVE_CONSUMER_CHANGE, pb.CommandActiveConsumerChange(consumer_id=4)))
        broker.send(wrap(T.REACHED_END_OF_TOPIC, pb.CommandReachedEndOfTopic(consumer_id=4)))
        broker.send(commands.close_producer(3))
        broker.send(commands.ping())
        await broker.wait_until(lambda: any(f.command.type == T.PONG for f in broker.frames))
        assert producer.events == [
            ("receipt", (9, 1, 2)),
            ("receipt", (10, 0, 0)),
            ("broker_close", None),
        ]
        assert consumer.events == [
            ("message", (4, 2, b"body")),
            ("message", (4, 3, b"other")),
            ("active", False),
            ("end", None),
        ]
        broker.drop()
        async with asyncio.timeout(5):
            await consumer.lost.wait()
        assert consumer.events[-1] == ("lost", "ConnectionLost")
        # CLOSE_PRODUCER dropped the producer's registration: no loss notification for it.
        assert producer.events[-1] == ("broker_close", None)
        assert not conn.is_open
        with pytest.raises(ConnectionLost):
            conn.send_command(commands.flow(4, 10))


async def test_keepalive_closes_a_silent_connection_and_fails_requests() -> None:
    async with FakeBroker() as broker:
        broker.answer_ping = False
        conn = await open_to(broker, keepalive_interval_s=0.2)
        recorder = Recorder()
        conn.register_producer(1, recorder)
        request = asyncio.create_task(
            conn.request(commands.partitioned_metadata("persistent://p/n/t", 0), timeout_s=10)
        )
        with pytest.raises(ConnectionLost):
            async with asyncio.timeout(5):
                await request
        assert recorder.events == [("lost", "ConnectionLost")]
        assert not conn.is_open
        await conn.close()


async def test_keepalive_keeps_an_answering_connection() -> None:
    async with FakeBroker() as broker:
        conn = await open_to(broker, keepalive_interval_s=0.1)
        await asyncio.sleep(0.5)
        assert conn.is_open
        assert broker.pings >= 3
        await conn.close()
