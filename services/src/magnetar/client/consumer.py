"""A consumer of one topic (or one partition): subscribe, receive, acknowledge, reconnect.

Receiving. After SUBSCRIBE succeeds the consumer grants ``receiver_queue_size`` permits (FLOW)
and refills them in batches of half the queue as the application takes messages
(:class:`ReceiverPermits`). Permits count messages, not entries: a batch of n costs n, less the
indexes the broker's ack set marks acknowledged (those are skipped, :func:`unpack_entry`). The
receiver queue is therefore bounded by the permits granted (plus at most one batch).
Messages the consumer drops itself (a reader's start filter, a stale consumer epoch, a payload
that does not decompress) give their permits back.

Acknowledging goes through :class:`~magnetar.client.acks.AckTracker` (grouped every
``ack_grouping_time_s``; batch-index ack sets when ``batch_index_ack_enabled``); negative acks
through :class:`~magnetar.client.negative_acks.NegativeAckTracker`; ack timeouts through
:class:`~magnetar.client.unacked.UnackedTracker`; the dead-letter policy through
:class:`~magnetar.client.dead_letter.DeadLetterRouter`. One timer task serves all three.
Redelivery: Shared and Key_Shared ask for the entries by id; Exclusive and Failover ask for
everything unacknowledged (as the C++ client does), bump the consumer epoch (messages sent
under an older epoch are dropped) and clear the receiver queue.

Reconnecting. CLOSE_CONSUMER from the broker, or a lost connection, detaches the consumer,
clears its receiver queue (the broker redelivers what was not acknowledged) and lets the
client's :class:`~magnetar.client.reconnect.Reconnector` resubscribe with backoff. Durable
subscriptions resume from the broker's acknowledged position; non-durable ones (readers) pass
the last message handed out as the start and drop anything up to it. Acks waiting in the
tracker survive and are sent on the new connection. SEEK makes the broker close the consumer
too; messages from before the seek are dropped until the resubscribe.

Created by ``Client.subscribe`` (directly or through a
:class:`~magnetar.client.multi_topic.MultiTopicConsumer`) and by a
:class:`~magnetar.client.reader.Reader`; it sees the client as a
:class:`~magnetar.client.context.ClientContext`.

Concurrency: one event loop. Connection callbacks (``on_message`` ...) run synchronously in the
connection's reader task and only touch in-memory state; the application calls the public
methods from its own tasks. Owned tasks: the timer and the reconnector, both stopped by close.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import deque
from collections.abc import Callable, Iterable

from magnetar.backoff import RECONNECT, retry
from magnetar.cancellation import cancel_and_wait
from magnetar.client.acks import AckTracker
from magnetar.client.chunking import Assembled, ChunkAssembler
from magnetar.client.connection import Connection
from magnetar.client.context import ClientContext
from magnetar.client.dead_letter import DeadLetterProducer, DeadLetterRouter
from magnetar.client.errors import (
    ClientClosed,
    ClientError,
    ConnectionLost,
    ConsumerBusy,
    InvalidConfiguration,
    OperationTimeout,
    ReceiveTimeout,
)
from magnetar.client.message import Message
from magnetar.client.negative_acks import NegativeAckTracker
from magnetar.client.receiver import (
    ConsumerOptions,
    ReceiverPermits,
    SubscriptionType,
    is_prior,
    unpack_entry,
)
from magnetar.client.reconnect import Reconnector, is_retryable
from magnetar.client.unacked import UnackedTracker
from magnetar.naming import client_topic_name
from magnetar.protocol import commands
from magnetar.protocol.batch import is_batch
from magnetar.protocol.errors import MalformedBatch
from magnetar.protocol.hand_decoded import Delivery
from magnetar.protocol.message_id import MessageId, unchecked_message_id
from magnetar.telemetry import get_logger
from magnetar.wire import pulsar_api_pb2 as pb

log = get_logger(__name__)

# ---------------------------------------------------------------------- the consumer


class Consumer:
    """One subscription on one topic (or one partition of a partitioned topic)."""

    def __init__(
        self,
        client: ClientContext,
        topic: str,
        subscription: str,
        options: ConsumerOptions,
        *,
        on_arrival: Callable[[], None] | None = None,
        dead_letter_topic_base: str | None = None,
    ) -> None:
        self._client = client
        name = client_topic_name(topic)
        self.topic = str(name)
        self.subscription = subscription
        self.options = options
        self.consumer_name = options.consumer_name or f"magnetar-{uuid.uuid4().hex[:10]}"
        self.partition = name.partition_index
        self._id = client.new_consumer_id()
        self._on_arrival = on_arrival
        self._queue: deque[Message] = deque()
        self._arrived = asyncio.Event()
        self._permits = ReceiverPermits(options.receiver_queue_size)
        self._acks = AckTracker(
            batch_index_ack=options.batch_index_ack_enabled,
            group_time_s=options.ack_grouping_time_s,
            max_group_size=options.ack_grouping_max_size,
        )
        self._nacks = NegativeAckTracker(options.negative_ack_redelivery_delay_s)
        self._chunks = ChunkAssembler(
            options.max_pending_chunked_message,
            options.expire_time_of_incomplete_chunked_message_s,
            options.auto_ack_oldest_chunked_message_on_queue_full,
        )
        # A rebuilt chunked message's id (its last chunk's) -> every chunk id to acknowledge.
        self._chunk_ids: dict[MessageId, tuple[MessageId, ...]] = {}
        self._unacked = UnackedTracker(options.ack_timeout_s)
        self._ack_timeout = self._unacked.enabled
        self._dead_letter: DeadLetterRouter | None = None
        if options.dead_letter_policy is not None:
            dlq = options.dead_letter_policy.topic_for(
                dead_letter_topic_base or self.topic, subscription
            )
            self._dead_letter = DeadLetterRouter(
                options.dead_letter_policy, dlq, self._create_dead_letter_producer
            )
        self._cnx: Connection | None = None
        self._closed = False
        self._close_error: BaseException | None = None
        self._epoch = 0
        self._drop_until_attached = False
        self._generation = 0
        self._last_dequeued: MessageId | None = None
        self._start: MessageId | None = options.start_message_id
        self._start_inclusive = options.start_message_id_inclusive
        self._is_active: bool | None = None
        self.reached_end_of_topic = False
        self._reconnector = Reconnector(
            f"consumer-{self.topic}-{subscription}", self._reattach, on_give_up=self._give_up
        )
        self._timer_wake = asyncio.Event()
        self._timer_task: asyncio.Task[None] | None = None
        self._ack_due: float | None = None

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        """First subscribe: retried on connection trouble until the operation timeout."""

        def retrying(exc: Exception, _delay: float) -> None:
            log.info("consumer_subscribe_retry", topic=self.topic, error=repr(exc))

        # Unlike a producer's first attach, a consumer that runs out of time raises the last
        # error itself (no OperationTimeout).
        await retry(
            self._attach,
            RECONNECT,
            retry_on=_retry_first_attach,
            give_up_after_s=self._client.operation_timeout_s,
            on_retry=retrying,
        )
        self._timer_task = asyncio.create_task(self._timers(), name=f"consumer-timers-{self.topic}")
        self._client.track(self)

    @property
    def is_connected(self) -> bool:
        return self._cnx is not None and self._cnx.is_open

    @property
    def is_active(self) -> bool | None:
        """Failover: whether the broker made this consumer the active one (None = not told)."""
        return self._is_active

    @property
    def closed(self) -> bool:
        return self._closed

    async def close(self) -> None:
        """Flush acks, close on the broker (best effort), stop tasks; idempotent."""
        if self._closed:
            return
        self._flush_acks()
        self._closed = True
        self._arrived.set()
        await self._reconnector.close()
        await cancel_and_wait(self._timer_task)
        cnx, self._cnx = self._cnx, None
        if cnx is not None and cnx.is_open:
            try:
                await cnx.request(
                    commands.close_consumer(self._id, cnx.new_request_id()),
                    timeout_s=min(5.0, self._client.operation_timeout_s),
                )
            except ClientError as exc:
                log.info("consumer_close_failed", topic=self.topic, error=repr(exc))
            cnx.unregister_consumer(self._id)
        if self._dead_letter is not None:
            await self._dead_letter.close()
        self._client.untrack(self)
        self._queue.clear()

    async def unsubscribe(self) -> None:
        """Delete the subscription on the broker, then close this consumer."""
        cnx = self._require_cnx()
        await cnx.request(commands.unsubscribe(self._id, cnx.new_request_id()))
        cnx.unregister_consumer(self._id)
        self._cnx = None
        await self.close()

    # ------------------------------------------------------------------ attach / detach
    async def _attach(self) -> None:
        client = self._client
        found = await client.lookup.lookup(self.topic)
        cnx = await client.pool.get(found.logical_address, found.physical_address)
        self._clear_queue()
        start = None
        if not self.options.durable:
            if self._last_dequeued is not None:  # resume after what the application has seen
                self._start, self._start_inclusive = self._last_dequeued, False
            start = self._start
        command = commands.subscribe(
            self.topic,
            self.subscription,
            self._id,
            cnx.new_request_id(),
            sub_type=int(self.options.subscription_type),  # type: ignore[arg-type]
            consumer_name=self.consumer_name,
            initial_position=int(self.options.initial_position),  # type: ignore[arg-type]
            durable=self.options.durable,
            start_message_id=start,
            read_compacted=self.options.read_compacted,
            priority_level=self.options.priority_level,
            metadata=self.options.properties,
            subscription_properties=self.options.subscription_properties,
            schema=None if self.options.schema is None else self.options.schema.to_proto(),
        )
        cnx.register_consumer(self._id, self)
        try:
            await cnx.request(command)
        except BaseException as exc:
            cnx.unregister_consumer(self._id)
            if isinstance(exc, OperationTimeout) and cnx.is_open:
                # the broker may have made the consumer after all: undo it
                cnx.send_command(commands.close_consumer(self._id, cnx.new_request_id()))
            raise
        if self._closed:
            cnx.unregister_consumer(self._id)
            cnx.send_command(commands.close_consumer(self._id, cnx.new_request_id()))
            return
        self._cnx = cnx
        self._generation += 1
        self._drop_until_attached = False
        cnx.send_command(commands.flow(self._id, self._permits.initial()))
        self._flush_acks()
        log.info(
            "consumer_subscribed", topic=self.topic, subscription=self.subscription,
            consumer=self.consumer_name, address=found.logical_address,
        )  # fmt: skip

    async def _reattach(self) -> None:
        if not self._closed:
            await self._attach()

    def _detach(self, reason: str) -> None:
        if self._closed:
            return
        cnx, self._cnx = self._cnx, None
        if cnx is None:
            return  # not attached: the attach in progress fails and is retried by its owner
        cnx.unregister_consumer(self._id)
        self._clear_queue()
        log.info("consumer_detached", topic=self.topic, subscription=self.subscription,
                 reason=reason)  # fmt: skip
        self._reconnector.trigger()

    def _give_up(self, error: BaseException) -> None:
        self._close_error = error
        self._closed = True
        self._arrived.set()

    def _require_cnx(self) -> Connection:
        self._check_open()
        cnx = self._cnx
        if cnx is None or not cnx.is_open:
            raise ConnectionLost(f"consumer on {self.topic} is reconnecting")
        return cnx

    def _check_open(self) -> None:
        if self._closed:
            raise ClientClosed(f"consumer on {self.topic} is closed") from self._close_error

    # ------------------------------------------------------------------ ConsumerHandler
    def on_message(self, delivery: Delivery, metadata: pb.MessageMetadata, payload: bytes) -> None:
        if self._closed:
            return
        # epoch 0 (no redelivery of everything yet): nothing can be stale; -1: none sent
        stale = self._epoch > 0 and 0 <= delivery.consumer_epoch < self._epoch
        chunk_ids: tuple[MessageId, ...] = ()
        if metadata.num_chunks_from_msg > 1:
            if stale or self._drop_until_attached:
                self._release(1)
                return
            assembled = self._take_chunk(delivery, metadata, payload)
            if assembled is None:
                self._release(1)  # the chunk is held; only the whole message takes a permit
                return
            metadata, payload, chunk_ids = (
                assembled.metadata,
                assembled.payload,
                assembled.chunk_ids,
            )
        try:
            unpacked = unpack_entry(self.topic, delivery, metadata, payload, self.partition)
        except (ClientError, MalformedBatch) as exc:
            self._discard_corrupt(delivery, metadata, exc)
            return
        if stale or self._drop_until_attached:
            self._release(unpacked.charged)
            return
        if chunk_ids:
            self._chunk_ids[unpacked.messages[0].message_id] = chunk_ids
        if unpacked.batch_size:
            entry = unchecked_message_id(
                delivery.ledger_id, delivery.entry_id, -1, delivery.partition, 0
            )
            self._acks.register_batch(entry, unpacked.batch_size, delivery.ack_set)
        kept = unpacked.messages
        if self._start is not None and not self.options.durable:
            start, inclusive = self._start, self._start_inclusive
            kept = [m for m in kept if not is_prior(m.message_id, start, inclusive=inclusive)]
        self._queue.extend(kept)
        if unpacked.charged > len(kept):
            self._release(unpacked.charged - len(kept))
        if kept:
            self._arrived.set()
            if self._on_arrival is not None:
                self._on_arrival()

    def _take_chunk(
        self, delivery: Delivery, metadata: pb.MessageMetadata, payload: bytes
    ) -> Assembled | None:
        """One chunk of a chunked message: the whole message once its last chunk is here."""
        partition = delivery.partition if delivery.partition >= 0 else self.partition
        chunk_id = MessageId(delivery.ledger_id, delivery.entry_id, partition=partition)
        now = asyncio.get_running_loop().time()
        assembled, given_up = self._chunks.add(metadata, chunk_id, payload, now)
        given_up += self._chunks.expire(now)
        for gone in given_up:
            log.info("consumer_chunked_message_given_up", topic=self.topic,
                     chunks=len(gone.chunk_ids), acknowledged=gone.acknowledge)  # fmt: skip
            for mid in gone.chunk_ids:
                if gone.acknowledge:
                    self._acks.individual(mid)
                else:
                    self._nacks.add(mid, now)
        if given_up:
            self._acks_changed()
            self._timer_wake.set()
        return assembled

    def on_active_consumer_change(self, is_active: bool) -> None:
        self._is_active = is_active
        log.info("consumer_active_change", topic=self.topic, active=is_active)

    def on_reached_end_of_topic(self) -> None:
        self.reached_end_of_topic = True

    def on_broker_close(self) -> None:
        self._detach("broker_closed")

    def on_connection_lost(self, error: BaseException) -> None:
        self._detach("connection_lost")

    def _discard_corrupt(
        self, delivery: Delivery, metadata: pb.MessageMetadata, error: Exception
    ) -> None:
        log.warning("consumer_corrupt_message", topic=self.topic, error=repr(error))
        count = metadata.num_messages_in_batch if is_batch(metadata) else 1
        if self._cnx is not None and self._cnx.is_open:
            self._cnx.send_command(
                commands.ack(
                    self._id,
                    [
                        MessageId(
                            delivery.ledger_id, delivery.entry_id, partition=delivery.partition
                        )
                    ],
                    validation_error=pb.CommandAck.DecompressionError,
                )
            )
        self._release(count)

    # ------------------------------------------------------------------ receiving
    async def receive(self, timeout_s: float | None = None) -> Message:
        """The next message; raises ReceiveTimeout after ``timeout_s`` (None = wait forever)."""
        return await wait_for_message(
            self.poll, self._arrived, self._check_open, timeout_s, f" on {self.topic}"
        )

    def poll(self) -> Message | None:
        """The next queued message without waiting, or None."""
        if not self._queue:
            return None
        message = self._queue.popleft()
        self._last_dequeued = message.message_id
        permits = self._permits.release(1)  # a FLOW goes once per half queue
        if permits:
            self._send_flow(permits)
        if self._ack_timeout:
            self._unacked.add(message.message_id, asyncio.get_running_loop().time())
            self._timer_wake.set()
        if self._dead_letter is not None:
            self._dead_letter.observe(message)
        return message

    async def batch_receive(
        self, max_messages: int | None = None, timeout_s: float | None = None
    ) -> list[Message]:
        """The queued messages, at least one and up to ``max_messages`` (None = all).

        Waits for the first as :meth:`receive` does (ReceiveTimeout after ``timeout_s``), then
        takes what is queued without waiting further (Pulsar's ``batch_receive`` with a policy
        of ``max_messages`` and no fill timeout). Cheaper per message than ``receive``.
        """
        taken = self.poll_many(max_messages)
        if taken:
            return taken
        first = await self.receive(timeout_s)
        return [first, *self.poll_many(None if max_messages is None else max_messages - 1)]

    def poll_many(self, max_messages: int | None = None) -> list[Message]:
        """Up to ``max_messages`` (None = all) queued messages without waiting; maybe none."""
        queue = self._queue
        count = len(queue) if max_messages is None else min(len(queue), max_messages)
        if count <= 0:
            return []
        if count == len(queue):
            taken = list(queue)
            queue.clear()
        else:
            taken = [queue.popleft() for _ in range(count)]
        self._last_dequeued = taken[-1].message_id
        permits = self._permits.release(count)
        if permits:
            self._send_flow(permits)
        if self._ack_timeout:
            now = asyncio.get_running_loop().time()
            for message in taken:
                self._unacked.add(message.message_id, now)
            self._timer_wake.set()
        if self._dead_letter is not None:
            for message in taken:
                self._dead_letter.observe(message)
        return taken

    @property
    def queued(self) -> int:
        return len(self._queue)

    def __aiter__(self) -> Consumer:
        return self

    async def __anext__(self) -> Message:
        try:
            return await self.receive()
        except ClientClosed:
            raise StopAsyncIteration from None

    def _release(self, count: int) -> None:
        permits = self._permits.release(count)
        if permits:
            self._send_flow(permits)

    def _send_flow(self, permits: int) -> None:
        if self._cnx is not None and self._cnx.is_open:
            self._cnx.send_command(commands.flow(self._id, permits))

    def _clear_queue(self) -> int:
        """Drop what is queued (and chunks held): the broker sends it all again."""
        cleared = len(self._queue)
        self._queue.clear()
        self._chunks.clear()
        return cleared

    # ------------------------------------------------------------------ acknowledging
    def acknowledge(self, target: Message | MessageId | Iterable[Message | MessageId]) -> None:
        """Acknowledge one message, or each of several (e.g. a :meth:`batch_receive`'s list);
        sent grouped, within ``ack_grouping_time_s``."""
        if self._closed:
            self._check_open()
        if isinstance(target, Message):
            mid = target.message_id
        elif isinstance(target, MessageId):
            mid = target
        else:
            self._acknowledge_each(target)
            return
        if self._chunk_ids and mid in self._chunk_ids:
            self._acknowledge_each(self._chunk_ids.pop(mid))
            return
        full = self._acks.individual(mid)
        if self._ack_timeout:  # without an ack timeout nothing is tracked
            self._unacked.remove(mid)
        if self._dead_letter is not None:
            self._dead_letter.forget(mid)
        if full or self._ack_due is None:  # else the group timer is already set
            self._acks_changed()

    def _acknowledge_each(self, targets: Iterable[Message | MessageId]) -> None:
        individual = self._acks.individual
        for target in targets:
            mid = target.message_id if isinstance(target, Message) else target
            if self._chunk_ids and mid in self._chunk_ids:
                self._acknowledge_each(self._chunk_ids.pop(mid))
                continue
            if individual(mid):
                self._flush_acks()  # max_group_size reached: one ACK per group, as one by one
            if self._ack_timeout:
                self._unacked.remove(mid)
            if self._dead_letter is not None:
                self._dead_letter.forget(mid)
        self._acks_changed()

    def acknowledge_cumulative(self, target: Message | MessageId) -> None:
        """Acknowledge everything up to ``target`` (Exclusive and Failover only)."""
        self._check_open()
        if not self.options.allows_cumulative_ack:
            raise InvalidConfiguration("cumulative ack needs an Exclusive or Failover subscription")
        mid = target.message_id if isinstance(target, Message) else target
        if self._chunk_ids:
            self._chunk_ids = {k: v for k, v in self._chunk_ids.items() if not k <= mid}
        self._acks.cumulative(mid)
        self._unacked.remove_up_to(mid)
        if self._dead_letter is not None:
            self._dead_letter.forget_up_to(mid)
        self._acks_changed()

    def negative_acknowledge(self, target: Message | MessageId) -> None:
        """Have the message redelivered after ``negative_ack_redelivery_delay_s``."""
        self._check_open()
        mid = target.message_id if isinstance(target, Message) else target
        now = asyncio.get_running_loop().time()
        for chunk in self._chunk_ids.pop(mid, ()):
            self._nacks.add(chunk, now)
        self._nacks.add(mid, now)
        self._unacked.remove(mid)
        self._timer_wake.set()

    def _acks_changed(self) -> None:
        if self._acks.flush_now:
            self._flush_acks()
        elif self._ack_due is None and self._acks.pending:
            self._ack_due = asyncio.get_running_loop().time() + self._acks.group_time_s
            self._timer_wake.set()

    def _flush_acks(self) -> None:
        cnx = self._cnx
        if cnx is None or not cnx.is_open or not self._acks.pending:
            return  # kept for the next connection
        self._ack_due = None
        for request in self._acks.flush():
            try:
                cnx.send_command(request.to_command(self._id))
            except ConnectionLost as exc:
                log.info("consumer_ack_lost", topic=self.topic, error=repr(exc))

    # ------------------------------------------------------------------ timers and redelivery
    async def _timers(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            now = loop.time()
            if self._ack_due is not None and now >= self._ack_due:
                self._ack_due = None
                self._flush_acks()
            due = self._nacks.due(now) + self._unacked.expired(now)
            if due:
                try:
                    await self._redeliver(due)
                except ClientError as exc:
                    log.info("consumer_redeliver_failed", topic=self.topic, error=repr(exc))
            deadlines = [
                d
                for d in (self._ack_due, self._nacks.next_deadline(), self._unacked.next_deadline())
                if d is not None
            ]
            self._timer_wake.clear()
            wait = max(0.0, min(deadlines) - loop.time()) if deadlines else None
            try:
                async with asyncio.timeout(wait):
                    await self._timer_wake.wait()
            except TimeoutError:
                pass

    async def _redeliver(self, entries: list[MessageId]) -> None:
        unique = list(dict.fromkeys(entries))
        if self._dead_letter is not None:
            unique, dead = await self._dead_letter.route(unique)
            for message in dead:
                self._acks.individual(message.message_id)
                self._unacked.remove(message.message_id)
            self._acks_changed()
        if not unique or self._cnx is None or not self._cnx.is_open:
            return  # without a connection the broker redelivers on resubscribe anyway
        if self.options.subscription_type in (SubscriptionType.SHARED, SubscriptionType.KEY_SHARED):
            self._cnx.send_command(commands.redeliver_unacknowledged_messages(self._id, unique))
            return
        self._epoch += 1
        command = commands.redeliver_unacknowledged_messages(self._id)
        command.redeliver_unacknowledged_messages.consumer_epoch = self._epoch
        cleared = self._clear_queue()
        self._unacked.clear()
        self._cnx.send_command(command)
        self._release(cleared)

    async def redeliver_unacknowledged_messages(self) -> None:
        """Ask the broker to redeliver everything this consumer holds unacknowledged."""
        cnx = self._require_cnx()
        self._epoch += 1
        command = commands.redeliver_unacknowledged_messages(self._id)
        command.redeliver_unacknowledged_messages.consumer_epoch = self._epoch
        cleared = self._clear_queue()
        self._unacked.clear()
        cnx.send_command(command)
        self._release(cleared)

    async def reconsume_later(self, message: Message, delay_s: float) -> None:
        """Only on a consumer subscribed with ``enable_retry=True`` (a MultiTopicConsumer)."""
        raise InvalidConfiguration("reconsume_later needs a consumer with enable_retry=True")

    async def _create_dead_letter_producer(self, topic: str) -> DeadLetterProducer:
        return await self._client.create_producer(topic, batching_enabled=False)

    # ------------------------------------------------------------------ broker queries
    async def seek(self, target: MessageId | int) -> None:
        """Move the subscription to a message id, or to a publish time (ms since the epoch).

        The broker closes the consumer; it resubscribes and continues from the new position.
        """
        cnx = self._require_cnx()
        self._flush_acks()
        if isinstance(target, MessageId):
            command = commands.seek(self._id, cnx.new_request_id(), message_id=target)
        else:
            command = commands.seek(self._id, cnx.new_request_id(), publish_time_ms=int(target))
        generation = self._generation
        # Everything from before the seek goes: queued messages, pending state, the old start.
        self._drop_until_attached = True
        self._clear_queue()
        self._acks.reset_position()
        self._nacks.clear()
        self._unacked.clear()
        self._last_dequeued = None
        self._start = target if isinstance(target, MessageId) else None
        self._start_inclusive = True
        try:
            await cnx.request(command)
        finally:
            if self._generation == generation and self._cnx is cnx:
                # Not closed by the broker (yet): take what comes next on this attachment.
                self._drop_until_attached = False

    async def get_last_message_id(self) -> MessageId:
        """The id of the topic's last message (entry_id -1 when the topic is empty)."""
        last, _ = await self.last_and_mark_delete()
        return last

    async def last_and_mark_delete(self) -> tuple[MessageId, MessageId | None]:
        cnx = self._require_cnx()
        response = await cnx.request(commands.get_last_message_id(self._id, cnx.new_request_id()))
        body = response.get_last_message_id_response
        mark = None
        if body.HasField("consumer_mark_delete_position"):
            mark = MessageId.from_proto(body.consumer_mark_delete_position)
        return MessageId.from_proto(body.last_message_id), mark

    @property
    def last_dequeued(self) -> MessageId | None:
        return self._last_dequeued

    @property
    def start_message_id(self) -> MessageId | None:
        return self._start

    @property
    def start_inclusive(self) -> bool:
        return self._start_inclusive


async def wait_for_message(
    poll: Callable[[], Message | None],
    arrived: asyncio.Event,
    check_open: Callable[[], None],
    timeout_s: float | None,
    where: str = "",
) -> Message:
    """``poll()``'s next message, waiting on ``arrived`` between tries.

    ``check_open`` raises once the handle is closed (after queued messages are taken);
    ReceiveTimeout after ``timeout_s`` (None = wait forever). Shared by Consumer and
    MultiTopicConsumer; ``where`` (" on <topic>" or "") goes into the timeout's message.
    """
    loop = asyncio.get_running_loop()
    deadline = None if timeout_s is None else loop.time() + timeout_s
    while True:
        arrived.clear()
        message = poll()
        if message is not None:
            return message
        check_open()
        remaining = None if deadline is None else deadline - loop.time()
        if remaining is not None and remaining <= 0:
            raise ReceiveTimeout(f"no message{where} within {timeout_s}s")
        try:
            async with asyncio.timeout(remaining):
                await arrived.wait()
        except TimeoutError:
            raise ReceiveTimeout(f"no message{where} within {timeout_s}s") from None


def _retry_first_attach(error: BaseException) -> bool:
    # ConsumerBusy on the first subscribe is the user's answer, not a transient.
    return not isinstance(error, ConsumerBusy) and is_retryable(error)
