"""Producers: ordered, pipelined, batched, compressed publishing that survives broker restarts.

A :class:`Producer` publishes to one topic (or one partition). Its state:

* ``_pending``: a deque of :class:`~magnetar.client.batch_builder.OpSend` in sequence-id order,
  each written to the connection and waiting for its SEND_RECEIPT. Receipts arrive in order;
  the head is completed when a receipt carries its sequence id (older ids are ignored, a newer
  one means the stream lost a message, and the connection is closed so everything is resent).
* ``_batch``: the open batch, flushed when full (count or bytes), after
  ``batching_max_publish_delay_ms``, before an unbatchable message, on flush() and close().
* permits: at most ``max_pending_messages`` messages between send() and their receipt
  (batched or not); over the limit send() waits, or raises ProducerQueueIsFull when
  ``block_if_queue_full`` is off.

Pulsar semantics on disconnect: when the connection breaks or the broker sends CLOSE_PRODUCER,
the producer keeps its pending queue, reattaches with a capped, jittered backoff (same producer
id and name, next epoch) and resends every pending op in order before any new one. Sequence ids
start after PRODUCER_SUCCESS's ``last_sequence_id`` unless ``initial_sequence_id`` is given
(broker deduplication can then drop resent duplicates). A send that got no receipt within
``send_timeout_ms`` fails with SendTimeout (0 disables the timeout).

Its configuration is :class:`~magnetar.client.producer_options.ProducerOptions`; a partitioned
topic gets one Producer per partition under a
:class:`~magnetar.client.partitioned_producer.PartitionedProducer`. Producers are created by
``Client.create_producer`` and see the client only as a
:class:`~magnetar.client.context.ClientContext`.

Concurrency: one event loop. Connection callbacks (receipts, errors, close) run in the
connection's reader task and never block; the only background tasks are the send-timeout
watcher and the Reconnector's, both cancelled by close(), and the closes of connections the
producer dropped (a receipt out of order, a SEND_ERROR), which close() lets finish.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import time
from collections import deque
from typing import Unpack

from magnetar.cancellation import cancel_and_wait
from magnetar.client.batch_builder import (
    BatchBuilder,
    OpSend,
    PendingMessage,
    ReceiptCallback,
    build_single,
)
from magnetar.client.chunking import split_chunks
from magnetar.client.compression import CompressionType, compression_type
from magnetar.client.connection import Connection
from magnetar.client.context import ClientContext
from magnetar.client.errors import (
    ClientError,
    ConnectionLost,
    MessageTooBig,
    ProducerClosed,
    ProducerQueueIsFull,
    SendTimeout,
    server_error,
)
from magnetar.client.message import NO_PROPERTIES
from magnetar.client.producer_options import (
    ProducerAccessMode,
    ProducerOptions,
    SendOptions,
    access_mode,
)
from magnetar.client.reconnect import Reconnector, retry_until
from magnetar.naming import client_topic_name
from magnetar.protocol import commands
from magnetar.protocol.hand_encoded import plain_metadata
from magnetar.protocol.message_id import MessageId, unchecked_message_id
from magnetar.tasks import TaskSet
from magnetar.telemetry import get_logger
from magnetar.wire import pulsar_api_pb2 as pb

log = get_logger(__name__)


class _State(enum.Enum):
    """A producer's lifecycle: CONNECTING <-> READY, then CLOSING -> CLOSED, or FAILED."""

    CONNECTING = "connecting"
    READY = "ready"
    CLOSING = "closing"
    CLOSED = "closed"
    FAILED = "failed"


# Checked on every send: a module-level tuple is as fast as the string constants were
# (an enum member looked up on its class is not).
_UNUSABLE = (_State.FAILED, _State.CLOSING, _State.CLOSED)
_WRITABLE = (_State.READY, _State.CLOSING)
_NO_DEADLINE_S = 365 * 24 * 3600.0  # a WaitForExclusive PRODUCER request waits this long


class Producer:
    """Publishes to one topic or partition. Create with ``Client.create_producer``."""

    def __init__(
        self, client: ClientContext, topic: str, options: ProducerOptions, *, partition: int = -1
    ) -> None:
        options.validate()
        self._client = client
        name = client_topic_name(topic)
        self.topic = str(name)
        self.partition = partition if partition >= 0 else name.partition_index
        self._options = options
        self._codec = compression_type(options.compression_type)
        self.producer_id = client.new_producer_id()
        self.producer_name = options.producer_name or ""
        self._user_named = options.producer_name is not None
        self._next_sequence_id = (
            options.initial_sequence_id + 1 if options.initial_sequence_id is not None else 0
        )
        self.last_sequence_id = (
            options.initial_sequence_id if options.initial_sequence_id is not None else -1
        )
        self._sequence_known = options.initial_sequence_id is not None
        self._epoch = 0
        self.topic_epoch: int | None = None  # the topic epoch the broker last granted us
        # The version of the producer's schema (8 bytes) stamped into every message; empty:
        # no schema.
        self.schema_version = b""
        self._pending: deque[OpSend] = deque()
        self._batch = BatchBuilder(
            max_messages=options.batching_max_messages, max_bytes=options.batching_max_bytes
        )
        self._batch_timer: asyncio.TimerHandle | None = None
        self._batching = options.batching_enabled
        self._pushed = 0  # ops pushed so far: the next op's push_index
        self._permits = options.max_pending_messages
        self._space = asyncio.Event()
        self._space.set()
        self._conn: Connection | None = None
        self._max_message_size: int | None = None
        self._state = _State.CONNECTING
        self._fatal: BaseException | None = None
        self._reconnector = Reconnector(
            f"producer-{self.topic}-{self.producer_id}",
            self._reattach,
            on_give_up=self._give_up,
        )
        self._timeout_task: asyncio.Task[None] | None = None
        self._background = TaskSet("producer-connection-close")
        self._attaching = False

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """First attach, retried on retryable errors within the client's operation timeout."""
        await retry_until(
            self._attach, timeout_s=self._client.operation_timeout_s, what=f"producer {self.topic}"
        )
        if self._options.send_timeout_ms > 0:
            self._timeout_task = asyncio.create_task(
                self._expire_loop(), name=f"producer-timeout-{self.producer_id}"
            )

    async def _attach(self) -> None:
        self._attaching = True
        try:
            await self._attach_once()
        finally:
            self._attaching = False

    async def _attach_once(self) -> None:
        result = await self._client.lookup.lookup(self.topic)
        conn = await self._client.pool.get(result.logical_address, result.physical_address)
        if self._state in (_State.CLOSED, _State.FAILED):
            return
        conn.register_producer(self.producer_id, self)
        mode = access_mode(self._options.access_mode)
        command = commands.producer(
            self.topic,
            self.producer_id,
            conn.new_request_id(),
            producer_name=self.producer_name or None,
            access_mode=mode.wire,
            epoch=self._epoch,
            metadata=self._options.properties,
            topic_epoch=self.topic_epoch,
            schema=None if self._options.schema is None else self._options.schema.to_proto(),
        )
        command.producer.user_provided_producer_name = self._user_named
        # WaitForExclusive: the broker answers "not ready" and then waits (no deadline, as the
        # official clients do).
        wait = mode is ProducerAccessMode.WAIT_FOR_EXCLUSIVE
        try:
            response = await conn.request(command, timeout_s=_NO_DEADLINE_S if wait else None)
        except BaseException:
            conn.unregister_producer(self.producer_id)
            raise
        self._epoch += 1
        if not conn.is_open:
            raise ConnectionLost(f"connection to {conn.physical_address} lost while attaching")
        success = response.producer_success
        self.producer_name = success.producer_name
        if success.HasField("topic_epoch"):
            self.topic_epoch = success.topic_epoch  # sent again on reconnect: fencing
        self.schema_version = success.schema_version  # empty without a schema
        if not self._sequence_known:
            self._sequence_known = True
            self.last_sequence_id = success.last_sequence_id
            self._next_sequence_id = max(0, success.last_sequence_id + 1)
        self._conn = conn
        self._max_message_size = conn.max_message_size
        if self._state is _State.CONNECTING:
            self._state = _State.READY
        # Resend what is pending, in order, before anything new can be written.
        for op in self._pending:
            self._write(op)
        log.info(
            "client_producer_attached",
            topic=self.topic,
            producer_name=self.producer_name,
            pending=len(self._pending),
            address=conn.physical_address,
        )

    async def _reattach(self) -> None:
        if self._state not in (_State.CONNECTING, _State.CLOSING):
            return
        await self._attach()

    def _detach(self, reason: str) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.unregister_producer(self.producer_id)
        if self._state is _State.READY:
            self._state = _State.CONNECTING
        if self._state in (_State.CONNECTING, _State.CLOSING) and not self._attaching:
            log.info("client_producer_disconnected", topic=self.topic, reason=reason)
            self._reconnector.trigger()

    def _give_up(self, error: BaseException) -> None:
        self._state = _State.FAILED
        self._fatal = error
        self._fail_all(error)

    async def close(self, *, drain: bool = True) -> None:
        """Flush (bounded by the send timeout), tell the broker, fail what is left; idempotent.
        ``drain=False`` skips the flush: what is pending fails at once (a geo-replicator's
        next round resends it)."""
        if self._state in (_State.CLOSED, _State.CLOSING):
            return
        was_failed = self._state is _State.FAILED
        self._state = _State.CLOSING
        if not was_failed and drain:
            bound = self._options.send_timeout_ms / 1000 or self._client.operation_timeout_s
            try:
                async with asyncio.timeout(bound):
                    await self.flush()
            except TimeoutError:
                pass
        self._state = _State.CLOSED
        self._cancel_batch_timer()
        await self._reconnector.close()
        await cancel_and_wait(self._timeout_task)
        # Let a connection close under way finish (a close cancelled before its first step would
        # leave the socket open); Connection.close bounds itself.
        await self._background.drain(self._client.operation_timeout_s)
        await self._background.close()
        conn, self._conn = self._conn, None
        if conn is not None and conn.is_open:
            try:
                await conn.request(
                    commands.close_producer(self.producer_id, conn.new_request_id()),
                    timeout_s=self._client.operation_timeout_s,
                )
            except ClientError as exc:
                log.info("client_producer_close_failed", topic=self.topic, error=repr(exc))
            conn.unregister_producer(self.producer_id)
        self._fail_all(ProducerClosed(f"producer on {self.topic} was closed"))
        self._client.untrack(self)

    @property
    def is_connected(self) -> bool:
        return self._state is _State.READY and self._conn is not None and self._conn.is_open

    @property
    def connected_address(self) -> str | None:
        """The broker address this producer is attached to (None while detached)."""
        conn = self._conn
        return conn.physical_address if conn is not None and conn.is_open else None

    @property
    def pending_count(self) -> int:
        """Messages sent but not yet acknowledged (including the open batch)."""
        return self._options.max_pending_messages - self._permits

    # ------------------------------------------------------------------ sending

    async def send(
        self,
        data: bytes,
        **options: Unpack[SendOptions],
    ) -> MessageId:
        """Publish ``data`` and wait for the broker's receipt; returns the message id."""
        future = await self.send_async(data, **options)
        if self._conn is not None and self._conn.is_open:
            # On loss the reattach resends; the future still completes or times out.
            with contextlib.suppress(ConnectionLost):
                await self._conn.drain()
        return await future

    async def send_async(
        self,
        data: bytes,
        **options: Unpack[SendOptions],
    ) -> asyncio.Future[MessageId]:
        """Enqueue ``data`` (waiting for queue space if configured); returns its receipt future."""
        message = self._new_message(data, options)
        if self._permits <= 0:  # no coroutine per send while there is room
            await self._wait_for_permit()
        return self._enqueue(message)

    async def _wait_for_permit(self) -> None:
        """Wait for queue space (or raise ProducerQueueIsFull when not blocking)."""
        while self._permits <= 0:
            if not self._options.block_if_queue_full:
                raise ProducerQueueIsFull(
                    f"{self._options.max_pending_messages} messages pending on {self.topic}"
                )
            self._space.clear()
            await self._space.wait()
            self._check_usable()

    def send_nowait(
        self,
        data: bytes,
        **options: Unpack[SendOptions],
    ) -> asyncio.Future[MessageId]:
        """Enqueue without waiting; raises ProducerQueueIsFull when the queue is full."""
        message = self._new_message(data, options)
        if self._permits <= 0:
            raise ProducerQueueIsFull(
                f"{self._options.max_pending_messages} messages pending on {self.topic}"
            )
        return self._enqueue(message)

    async def send_callback(
        self,
        data: bytes,
        callback: ReceiptCallback,
        context: object = None,
        **options: Unpack[SendOptions],
    ) -> None:
        """Enqueue ``data`` (waiting for queue space if configured), without a future.

        ``callback(context, result)`` is called once, from the connection's reader task (or
        from close/timeout handling), with the message id or the error that failed the send.
        It must not block; an exception it raises is logged. The cheap path for load
        generators: no future, no call_soon per message, no closure (``context`` carries the
        per-message state, e.g. the send time).
        """
        if not options and data.__class__ is bytes and self._plain_ready(len(data)):
            self._send_plain(data, callback, context)
            return
        message = self._new_message(data, options, with_future=False)
        message.callback = callback
        message.context = context
        if self._permits <= 0:  # no coroutine per send while there is room
            await self._wait_for_permit()
        self._enqueue(message)

    async def send_entry(
        self, metadata: pb.MessageMetadata, payload: bytes
    ) -> asyncio.Future[MessageId]:
        """Enqueue one stored entry as it is: ``metadata`` (kept whole: producer name, sequence
        id, publish time, keys, properties, batch count, compression) and its ``payload``
        (compressed, a batch stays a batch). The SEND carries this producer's own sequence id,
        so receipts match its queue; the broker deduplicates such entries by the metadata's
        producer name and sequence id (Pulsar's replicators, ``pulsar.repl.*`` producers).
        Waits for queue space like :meth:`send_async`; returns the receipt's future (the id of
        the entry, batch index -1)."""
        self._check_usable()
        future: asyncio.Future[MessageId] = asyncio.get_running_loop().create_future()
        message = PendingMessage(payload, -1, future=future)
        if self._permits <= 0:
            await self._wait_for_permit()
        self._check_usable()
        self._flush_batch()
        sequence_id = self._next_sequence_id
        self._next_sequence_id += 1
        message.sequence_id = sequence_id
        self._permits -= 1
        batched = (
            metadata.num_messages_in_batch if metadata.HasField("num_messages_in_batch") else 0
        )
        op = OpSend(
            sequence_id=sequence_id,
            highest_sequence_id=sequence_id,
            metadata=metadata,
            payload=payload,
            messages=[message],
            is_batch=True,  # the SEND names its message count (the batch's, below)
            wire_messages=max(1, batched),
        )
        self._push_one(op)
        return future

    async def flush(self) -> None:
        """Send the open batch and wait until every message sent so far is settled."""
        self._flush_batch()
        futures = [m.future for op in self._pending for m in op.messages if m.future is not None]
        if self._pending:
            # Callback sends have no future: wait until the last op pushed so far left the
            # queue (ops leave it in the order they were pushed).
            last = self._pending[-1].push_index
            while self._pending and self._pending[0].push_index <= last:
                self._space.clear()
                await self._space.wait()
        if futures:
            await asyncio.wait(futures)

    # ------------------------------------------------------------------ internals: enqueue

    def _check_usable(self) -> None:
        if self._state in _UNUSABLE:
            if self._state is _State.FAILED:
                assert self._fatal is not None
                raise ProducerClosed(f"producer on {self.topic} failed: {self._fatal}")
            raise ProducerClosed(f"producer on {self.topic} is closed")

    def _new_message(
        self, data: bytes, options: SendOptions, *, with_future: bool = True
    ) -> PendingMessage:
        self._check_usable()
        future = asyncio.get_running_loop().create_future() if with_future else None
        if not options and data.__class__ is bytes:
            # The common case: a payload and nothing else.
            return PendingMessage(data, -1, future=future)
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"data must be bytes, not {type(data).__name__}")
        key, partition_key = options.get("key"), options.get("partition_key")
        if key is not None and partition_key is not None and key != partition_key:
            raise ValueError("key and partition_key are aliases; give one")
        deliver_at_ms, deliver_after_ms = (
            options.get("deliver_at_ms"),
            options.get("deliver_after_ms"),
        )
        if deliver_after_ms is not None:
            deliver_at_ms = int(time.time() * 1000) + deliver_after_ms
        sequence_id = options.get("sequence_id")
        return PendingMessage(
            payload=bytes(data),
            sequence_id=-1 if sequence_id is None else sequence_id,
            key=key if key is not None else partition_key,
            properties=dict(options.get("properties") or {}),
            event_time_ms=options.get("event_time_ms"),
            ordering_key=options.get("ordering_key"),
            deliver_at_ms=deliver_at_ms,
            future=future,
        )

    def _enqueue(self, message: PendingMessage) -> asyncio.Future[MessageId]:
        """Number, batch or send ``message``; returns its future (None for callback sends)."""
        self._check_usable()
        if message.sequence_id < 0:
            message.sequence_id = self._next_sequence_id
            self._next_sequence_id += 1
        self._permits -= 1
        batch = self._batch
        if self._batching and batch.fits_alone(message):
            if not batch.has_space(message):
                self._flush_batch()
            if batch.add(message):
                self._flush_batch()
            elif self._batch_timer is None:
                delay = self._options.batching_max_publish_delay_ms / 1000
                loop = asyncio.get_running_loop()
                self._batch_timer = loop.call_later(delay, self._flush_batch)
        else:
            self._flush_batch()
            op = build_single(
                message,
                producer_name=self.producer_name,
                codec=self._codec,
                publish_time_ms=int(time.time() * 1000),
            )
            self._push(op)
        return message.future  # type: ignore[return-value]

    def _plain_ready(self, size: int) -> bool:
        """Whether a message of ``size`` bytes and nothing else can take :meth:`_send_plain`:
        the producer is attached with room, sends unbatched and uncompressed without a schema,
        and the message needs no chunking."""
        limit = self._max_message_size
        return (
            self._state is _State.READY
            and self._permits > 0
            and not self._batching
            and self._codec is CompressionType.NONE
            and not self.schema_version
            and (limit is None or size <= limit)
        )

    def _send_plain(self, data: bytes, callback: ReceiptCallback, context: object) -> None:
        """:meth:`_enqueue` of a plain unbatched message (when :meth:`_plain_ready`), with
        what build_single, _push, _push_one and _write do for it in one call: the load
        generator's path, where those calls cost about a fifth of a producer's CPU
        (docs/benchmarks.md, "Issue 17, session 19")."""
        sequence_id = self._next_sequence_id
        self._next_sequence_id = sequence_id + 1
        self._permits -= 1
        message = PendingMessage(data, sequence_id, None, NO_PROPERTIES, None, None, None, None,
                                 callback, context)  # fmt: skip
        encoded = plain_metadata(self.producer_name, sequence_id, int(time.time() * 1000))
        op = OpSend(sequence_id, sequence_id, None, data, [message], False, time.monotonic(),
                    self._pushed, 0, encoded)  # fmt: skip
        self._pushed += 1
        self._pending.append(op)
        conn = self._conn
        if conn is None or not conn.is_open:
            return
        try:  # noqa: SIM105 (on loss the reattach resends everything pending)
            conn.send_message(self.producer_id, sequence_id, -1, -1, encoded, data)
        except ConnectionLost:
            pass

    def _cancel_batch_timer(self) -> None:
        if self._batch_timer is not None:
            self._batch_timer.cancel()
            self._batch_timer = None

    def _flush_batch(self) -> None:
        self._cancel_batch_timer()
        if self._batch.empty:
            return
        op = self._batch.build(
            producer_name=self.producer_name,
            codec=self._codec,
            publish_time_ms=int(time.time() * 1000),
        )
        self._push(op)

    def _push(self, op: OpSend) -> None:
        limit = self._max_message_size
        if limit is not None and len(op.payload) > limit:
            if self._options.chunking_enabled and not op.is_batch:
                for chunk in split_chunks(op, limit, self.producer_name):
                    self._push_one(chunk)
                return
            self._settle(
                op,
                MessageTooBig(
                    f"{len(op.payload)} bytes exceed the broker's limit of {limit} on {self.topic}"
                ),
            )
            return
        self._push_one(op)

    def _push_one(self, op: OpSend) -> None:
        if self.schema_version:  # every message (and every chunk) names its schema version
            op.name_schema(self.schema_version)
        op.created_at = time.monotonic()
        op.push_index = self._pushed
        self._pushed += 1
        self._pending.append(op)
        if self._state in _WRITABLE and self._conn is not None:
            self._write(op)

    def _write(self, op: OpSend) -> None:
        conn = self._conn
        if conn is None or not conn.is_open:
            return
        if op.is_batch:
            num_messages = op.wire_messages or len(op.messages)
            highest = op.highest_sequence_id
        else:
            num_messages = highest = -1  # not written
        # On loss on_connection_lost follows, and the reattach resends everything pending.
        # (try/except, not contextlib.suppress: no context manager object per frame.)
        try:  # noqa: SIM105
            conn.send_message(
                self.producer_id,
                op.sequence_id,
                num_messages,
                highest,
                op.metadata_bytes(),
                op.payload,
            )
        except ConnectionLost:
            pass

    # ------------------------------------------------------------------ internals: settle

    def _release(self, count: int) -> None:
        self._permits += count
        self._space.set()

    def _settle_stored(self, op: OpSend, ledger_id: int, entry_id: int) -> None:
        """``op``'s messages were stored in the entry at (ledger_id, entry_id)."""
        messages = op.messages
        if not messages:
            return  # a chunk before the last: the message settles with its last chunk
        if op.is_batch:
            ids = op.message_ids(ledger_id, entry_id, self.partition)
            for message, message_id in zip(messages, ids, strict=True):
                message.settle(message_id)
        else:  # one message (the last chunk's, for a chunked one)
            messages[0].settle(unchecked_message_id(ledger_id, entry_id, -1, self.partition, 0))
        if op.highest_sequence_id > self.last_sequence_id:
            self.last_sequence_id = op.highest_sequence_id
        self._release(len(op.messages))

    def _settle(self, op: OpSend, error: BaseException) -> None:
        """``op``'s messages failed with ``error``."""
        if not op.messages:
            return  # a chunk before the last: the message settles with its last chunk
        for message in op.messages:
            message.settle(error)
        self._release(len(op.messages))

    def _fail_all(self, error: BaseException) -> None:
        self._cancel_batch_timer()
        while self._pending:
            self._settle(self._pending.popleft(), error)
        messages = self._batch.drain()
        for message in messages:
            message.settle(error)
        self._release(len(messages))

    async def _expire_loop(self) -> None:
        timeout = self._options.send_timeout_ms / 1000
        while True:
            now = time.monotonic()
            while self._pending and self._pending[0].created_at + timeout <= now:
                op = self._pending.popleft()
                log.warning("client_send_timeout", topic=self.topic, sequence_id=op.sequence_id)
                self._settle(
                    op,
                    SendTimeout(
                        f"message {op.sequence_id} on {self.topic} not acknowledged within "
                        f"{timeout:.1f}s"
                    ),
                )
            wait = self._pending[0].created_at + timeout - now if self._pending else timeout
            await asyncio.sleep(max(wait, 0.01))

    # ------------------------------------------------------------------ ProducerHandler

    def on_send_receipt(self, sequence_id: int, ledger_id: int, entry_id: int) -> None:
        if not self._pending:
            return
        head = self._pending[0]
        if sequence_id < head.sequence_id:
            return  # a receipt for something already timed out, or a duplicate
        if sequence_id > head.sequence_id:
            log.warning(
                "client_receipt_out_of_order",
                topic=self.topic,
                expected=head.sequence_id,
                got=sequence_id,
            )
            self._close_connection()
            return
        self._pending.popleft()
        self._settle_stored(head, ledger_id, entry_id)

    def on_send_error(self, error: pb.CommandSendError) -> None:
        # ChecksumError (C++) and NotAllowedError (Java, e.g. "Exceeds max allowed delivery
        # delay"): that message fails, the others carry on; a resend would be refused again.
        if error.error in (pb.ChecksumError, pb.NotAllowedError) and self._pending:
            head = self._pending[0]
            if head.sequence_id == error.sequence_id:
                self._pending.popleft()
                self._settle(head, server_error(error.error, error.message))
                return
        log.warning(
            "client_send_error", topic=self.topic, code=int(error.error), message=error.message
        )
        # The C++ client's answer: drop the connection, reconnect and resend.
        self._close_connection()

    def on_broker_close(self) -> None:
        self._conn = None  # the connection already dropped our registration
        self._detach("broker closed the producer")

    def on_connection_lost(self, error: BaseException) -> None:
        self._conn = None
        self._detach(str(error))

    def _close_connection(self) -> None:
        conn = self._conn
        if conn is not None:
            self._background.spawn(conn.close())
