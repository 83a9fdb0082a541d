"""Producer behaviour a real broker rarely shows, against the scripted FakeBroker on loopback.

Send timeout, out-of-order receipts (reconnect and resend), SEND_ERROR, broker CLOSE_PRODUCER,
a broker that goes away and comes back on a new connection, and MessageTooBig.
"""

from __future__ import annotations

import asyncio

import pytest

from magnetar.client import (
    ChecksumError,
    Client,
    MessageTooBig,
    Producer,
    ProducerClosed,
    SendTimeout,
    TopicTerminated,
)
from magnetar.protocol import commands
from magnetar.protocol.envelope import wrap
from magnetar.protocol.frame import Frame
from magnetar.wire import pulsar_api_pb2 as pb
from tests.unit.client.fake_broker import FakeBroker, lookup_here

T = pb.BaseCommand


class ScriptedTopic:
    """Answers PRODUCER and SEND like a broker; ``hold`` keeps receipts back."""

    def __init__(self) -> None:
        self.entry = 0
        self.hold = False
        self.held: list[pb.CommandSend] = []
        self.stored: list[tuple[int, int]] = []  # (sequence_id, num_messages)
        self.producer_error: pb.ServerError.ValueType | None = None
        self.producers = 0

    def __call__(self, broker: FakeBroker, frame: Frame) -> None:
        command = frame.command
        if lookup_here(broker, frame):
            return
        if command.type == T.PRODUCER:
            self.producers += 1
            rid = command.producer.request_id
            if self.producer_error is not None:
                err = pb.CommandError(request_id=rid, error=self.producer_error, message="x")
                broker.send(wrap(T.ERROR, err))
                return
            ok = pb.CommandProducerSuccess(
                request_id=rid, producer_name="fake-producer", last_sequence_id=41
            )
            broker.send(wrap(T.PRODUCER_SUCCESS, ok))
        elif command.type == T.SEND:
            send = command.send
            self.stored.append((send.sequence_id, send.num_messages))
            if self.hold:
                self.held.append(send)
            else:
                self.receipt(broker, send)
        elif command.type == T.CLOSE_PRODUCER:
            broker.send(
                wrap(T.SUCCESS, pb.CommandSuccess(request_id=command.close_producer.request_id))
            )

    def receipt(self, broker: FakeBroker, send: pb.CommandSend) -> None:
        body = pb.CommandSendReceipt(
            producer_id=send.producer_id,
            sequence_id=send.sequence_id,
            message_id=pb.MessageIdData(ledger_id=7, entry_id=self.entry),
        )
        self.entry += 1
        broker.send(wrap(T.SEND_RECEIPT, body))


async def make(broker: FakeBroker, **options: object) -> tuple[Client, Producer]:
    client = Client(f"pulsar://{broker.address}", operation_timeout_s=3)
    producer = await client.create_producer("t", batching_enabled=False, **options)  # type: ignore[arg-type]
    assert isinstance(producer, Producer)
    return client, producer


async def test_sequence_ids_continue_after_the_brokers_last_sequence_id() -> None:
    topic = ScriptedTopic()
    async with FakeBroker(topic) as broker:
        client, producer = await make(broker)
        assert producer.producer_name == "fake-producer"
        assert producer.last_sequence_id == 41
        await producer.send(b"a")
        assert topic.stored == [(42, 1)]
        await client.close()


async def test_send_timeout_fails_pending_sends() -> None:
    topic = ScriptedTopic()
    topic.hold = True
    async with FakeBroker(topic) as broker:
        client, producer = await make(broker, send_timeout_ms=300)
        futures = [producer.send_nowait(b"x%d" % i) for i in range(3)]
        async with asyncio.timeout(5):
            results = await asyncio.gather(*futures, return_exceptions=True)
        assert all(isinstance(r, SendTimeout) for r in results)
        assert producer.pending_count == 0
        # A late receipt for a timed-out message is ignored; new sends still work.
        topic.receipt(broker, topic.held[0])
        topic.hold = False
        assert (await producer.send(b"later")).entry_id == 1
        await client.close()


async def test_out_of_order_receipt_reconnects_and_resends_in_order() -> None:
    topic = ScriptedTopic()
    topic.hold = True
    async with FakeBroker(topic) as broker:
        client, producer = await make(broker)
        futures = [producer.send_nowait(b"x%d" % i) for i in range(3)]
        await broker.wait_until(lambda: len(topic.held) == 3)
        topic.hold = False
        topic.receipt(broker, topic.held[2])  # skips 42 and 43: the stream lost something
        async with asyncio.timeout(5):
            ids = await asyncio.gather(*futures)
        assert broker.connects == 2
        assert [s for s, _ in topic.stored[3:]] == [42, 43, 44]  # resent, in order
        assert [i.entry_id for i in ids] == [1, 2, 3]
        await client.close()


async def test_broker_close_and_dropped_connection_resend_pending() -> None:
    topic = ScriptedTopic()
    async with FakeBroker(topic) as broker:
        client, producer = await make(broker)
        await producer.send(b"first")
        topic.hold = True
        pending = producer.send_nowait(b"second")
        await broker.wait_until(lambda: bool(topic.held))
        topic.hold = False
        broker.send(commands.close_producer(producer.producer_id))
        async with asyncio.timeout(5):
            second = await pending
        assert topic.producers == 2
        assert topic.stored == [(42, 1), (43, 1), (43, 1)]  # 43 resent after the close
        broker.drop()  # the connection breaks: reconnect on a new one
        async with asyncio.timeout(5):
            third = await producer.send(b"third")
        assert broker.connects == 2
        assert third > second
        await client.close()


async def test_checksum_send_error_fails_only_that_message() -> None:
    topic = ScriptedTopic()
    topic.hold = True
    async with FakeBroker(topic) as broker:
        client, producer = await make(broker)
        future = producer.send_nowait(b"x")
        await broker.wait_until(lambda: bool(topic.held))
        send = topic.held[0]
        error = pb.CommandSendError(
            producer_id=send.producer_id,
            sequence_id=send.sequence_id,
            error=pb.ChecksumError,
            message="bad crc",
        )
        broker.send(wrap(T.SEND_ERROR, error))
        with pytest.raises(ChecksumError):
            await future
        await client.close()


async def test_fatal_error_on_reattach_fails_the_producer() -> None:
    topic = ScriptedTopic()
    async with FakeBroker(topic) as broker:
        client, producer = await make(broker)
        topic.producer_error = pb.TopicTerminatedError
        topic.hold = True
        pending = producer.send_nowait(b"x")
        broker.send(commands.close_producer(producer.producer_id))
        with pytest.raises(TopicTerminated):
            async with asyncio.timeout(5):
                await pending
        with pytest.raises(ProducerClosed):
            await producer.send(b"y")
        await client.close()


async def test_message_too_big_for_the_broker() -> None:
    async with FakeBroker(ScriptedTopic(), max_message_size=1000) as broker:
        client, producer = await make(broker)
        with pytest.raises(MessageTooBig):
            await producer.send(b"x" * 2000)
        assert producer.pending_count == 0
        await producer.send(b"fits")
        await client.close()


async def test_send_callback_settles_in_order_and_flush_waits_for_it() -> None:
    topic = ScriptedTopic()
    topic.hold = True
    async with FakeBroker(topic) as broker:
        client, producer = await make(broker, send_timeout_ms=0)
        results: list[tuple[object, object]] = []

        def on_receipt(context: object, result: object) -> None:
            results.append((context, result))

        for i in range(5):
            await producer.send_callback(b"x%d" % i, on_receipt, i)
        # Pipelined: every send is on the wire before any receipt.
        await broker.wait_until(lambda: len(topic.held) == 5)
        assert results == []
        flushing = asyncio.create_task(producer.flush())
        await asyncio.sleep(0.05)
        assert not flushing.done()
        topic.hold = False
        for send in topic.held:
            topic.receipt(broker, send)
        async with asyncio.timeout(5):
            await flushing
        assert [c for c, _ in results] == [0, 1, 2, 3, 4]
        assert [r.entry_id for _, r in results] == [0, 1, 2, 3, 4]  # type: ignore[attr-defined]
        await client.close()


async def test_send_callback_gets_the_send_timeout_error() -> None:
    topic = ScriptedTopic()
    topic.hold = True
    async with FakeBroker(topic) as broker:
        client, producer = await make(broker, send_timeout_ms=200)
        results: list[object] = []
        settled = asyncio.Event()

        def on_receipt(_context: object, result: object) -> None:
            results.append(result)
            settled.set()

        await producer.send_callback(b"x", on_receipt)
        async with asyncio.timeout(5):
            await settled.wait()
        assert isinstance(results[0], SendTimeout)
        assert producer.pending_count == 0
        await client.close()


async def test_batches_pipeline_without_waiting_for_receipts() -> None:
    topic = ScriptedTopic()
    topic.hold = True
    async with FakeBroker(topic) as broker:
        client = Client(f"pulsar://{broker.address}", operation_timeout_s=3)
        producer = await client.create_producer(
            "t", batching_max_messages=2, batching_max_publish_delay_ms=1000
        )
        assert isinstance(producer, Producer)
        for i in range(6):
            await producer.send_callback(b"x%d" % i, lambda _c, _r: None)
        # Three full batches on the wire while none is acknowledged.
        await broker.wait_until(lambda: len(topic.held) == 3)
        assert topic.stored == [(42, 2), (44, 2), (46, 2)]
        topic.hold = False
        for send in topic.held:
            topic.receipt(broker, send)
        async with asyncio.timeout(5):
            await producer.flush()
        assert producer.pending_count == 0
        await client.close()


async def test_a_plain_callback_send_writes_what_the_general_path_writes() -> None:
    """send_callback of a bare payload takes the producer's one-call path; its SEND is the
    general path's, and what that path alone handles (a message over the broker's limit, a
    schema version, batching) still takes it."""
    topic = ScriptedTopic()
    async with FakeBroker(topic, max_message_size=1000) as broker:
        client, producer = await make(broker, send_timeout_ms=0)
        results: list[object] = []

        def on_receipt(_context: object, result: object) -> None:
            results.append(result)

        await producer.send_callback(b"plain", on_receipt)
        await producer.send(b"general")
        await producer.send_callback(b"x" * 2000, on_receipt)  # over the limit
        producer.schema_version = b"\x00" * 7 + b"\x03"
        await producer.send_callback(b"named", on_receipt)
        await producer.flush()
        sends = [f for f in broker.frames if f.command.type == T.SEND]
        assert [f.payload.payload for f in sends if f.payload] == [b"plain", b"general", b"named"]
        fast, general, named = (f.command.send for f in sends)
        assert (fast.sequence_id, general.sequence_id, named.sequence_id) == (42, 43, 45)
        for send in (fast, general, named):
            assert not send.HasField("num_messages")
            assert not send.HasField("highest_sequence_id")
        metadata = [f.payload.metadata for f in sends if f.payload]
        assert [m.sequence_id for m in metadata] == [42, 43, 45]
        assert metadata[0].producer_name == metadata[1].producer_name == "fake-producer"
        assert metadata[0].publish_time > 0
        fields = [sorted(d.name for d, _ in m.ListFields()) for m in metadata]
        assert fields[0] == fields[1] == ["producer_name", "publish_time", "sequence_id"]
        assert metadata[2].schema_version == producer.schema_version
        assert isinstance(results[1], MessageTooBig)
        assert results[0].entry_id == 0  # type: ignore[attr-defined]
        await client.close()


async def test_a_batching_producers_callback_sends_are_batched() -> None:
    topic = ScriptedTopic()
    async with FakeBroker(topic) as broker:
        client = Client(f"pulsar://{broker.address}", operation_timeout_s=3)
        producer = await client.create_producer("t", batching_enabled=True)
        assert isinstance(producer, Producer)
        for i in range(3):
            await producer.send_callback(b"m%d" % i, lambda _c, _r: None)
        await producer.flush()
        assert topic.stored == [(42, 3)]  # one SEND of the three
        alone = await producer.send(b"alone")  # a batch of one is still a batch
        assert (alone.batch_index, alone.batch_size) == (0, 1)
        await client.close()


async def test_a_plain_callback_send_is_resent_as_it_was_sent() -> None:
    topic = ScriptedTopic()
    topic.hold = True
    async with FakeBroker(topic) as broker:
        client, producer = await make(broker, send_timeout_ms=0)
        results: list[object] = []
        await producer.send_callback(b"again", lambda _c, r: results.append(r))
        await broker.wait_until(lambda: bool(topic.held))
        topic.hold = False
        broker.send(commands.close_producer(producer.producer_id))  # the client resends
        async with asyncio.timeout(5):
            await producer.flush()
        sends = [f for f in broker.frames if f.command.type == T.SEND]
        assert len(sends) == 2
        first, resent = (f.payload for f in sends)
        assert first is not None
        assert resent is not None
        assert resent.metadata == first.metadata  # the same bytes, publish time included
        assert resent.payload == first.payload == b"again"
        assert results[0].entry_id == 0  # type: ignore[attr-defined]
        await client.close()


async def test_a_full_queue_waits_for_receipts_then_sends_the_rest() -> None:
    """With block_if_queue_full, a send past max_pending_messages waits for room; each receipt
    makes room (the waiter is woken once a receipt frees a slot, not on every receipt)."""
    topic = ScriptedTopic()
    topic.hold = True
    async with FakeBroker(topic) as broker:
        client, producer = await make(
            broker, send_timeout_ms=0, max_pending_messages=2, block_if_queue_full=True
        )
        results: list[object] = []

        async def send_all() -> None:
            for i in range(6):
                await producer.send_callback(b"q%d" % i, lambda _c, r: results.append(r))

        sending = asyncio.create_task(send_all())
        await broker.wait_until(lambda: len(topic.held) == 2)
        await asyncio.sleep(0.05)
        assert not sending.done()  # the third waits for room
        topic.hold = False
        for send in topic.held:
            topic.receipt(broker, send)
        async with asyncio.timeout(5):
            await sending
            await producer.flush()
        assert [r.entry_id for r in results] == [0, 1, 2, 3, 4, 5]  # type: ignore[attr-defined]
        await client.close()
