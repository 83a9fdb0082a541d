"""The consumer side of a ServerCnx: SUBSCRIBE, FLOW, ACK, SEEK and the other consumer commands.

:class:`ConsumerRequests` owns one connection's consumers by id; the connection
(:mod:`.connection`) calls :meth:`ConsumerRequests.handle` from its reader, in arrival order,
for every command neither it nor its :class:`~magnetar.broker.producer_requests.ProducerRequests`
handles; it returns False for those it does not know either. It sees the connection only
through :class:`~.transport_cnx.TransportCnx`.

FLOW and REDELIVER are applied inline (their order matters, they never wait); the others are
requests answered by request id from a task of the connection. ACK runs in such a task too:
tasks start in arrival order, so ACKs change the subscription's state in order, in their first
step (after any FLOW or REDELIVER of the same read, which are inline), then wait for persistence.

Answers follow the reference's traps: SUCCESS for SUBSCRIBE / CLOSE_CONSUMER / UNSUBSCRIBE /
SEEK; ACK_RESPONSE only when the ACK carried a request id; nothing for FLOW and REDELIVER.
A SUBSCRIBE with a schema is admitted by the schema registry first (Pulsar's consumer rules,
:mod:`magnetar.broker.schemas.registry`); a refusal is ERROR(IncompatibleSchema).

Concurrency: on the broker's loop; :meth:`ConsumerRequests.release_all` runs once, after the
connection's tasks are done.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from magnetar.authorization import CONSUME, LOOKUP
from magnetar.broker.consumer import Consumer
from magnetar.broker.dispatch import HashRange, KeySharedMeta, KeySharedMode, ack_set_to_mask
from magnetar.broker.errors import ConsumerNotFound, NotAllowed
from magnetar.broker.non_persistent_topic import NonPersistentSubscription, NonPersistentTopic
from magnetar.broker.persistent_topic import PersistentTopic
from magnetar.broker.schemas import schema_of
from magnetar.broker.service import BrokerService
from magnetar.broker.subscription import PersistentSubscription
from magnetar.broker.transport_cnx import TransportCnx
from magnetar.managed_ledger import InitialPosition, Position
from magnetar.managed_ledger.position import position_of_pair
from magnetar.naming import NamespaceName, TopicName
from magnetar.protocol import commands
from magnetar.protocol.frame import Frame
from magnetar.protocol.hand_decoded import AckFrame
from magnetar.protocol.message_id import INT64_MAX, MessageId, to_signed64
from magnetar.schema import SchemaType
from magnetar.tasks import TaskSet
from magnetar.telemetry import get_logger
from magnetar.wire import pulsar_api_pb2 as pb

log = get_logger(__name__)
T = pb.BaseCommand
Mode = pb.CommandGetTopicsOfNamespace
_ACK_DRAIN_S = 5.0
# NamedTuple's generated __new__ is a Python-level lambda: the per-entry lines below build
# their tuples with tuple.__new__ directly (about half the cost).
_new_tuple = tuple.__new__


@dataclass
class ConsumerRef:
    consumer: Consumer
    topic: PersistentTopic | NonPersistentTopic
    subscription: PersistentSubscription | NonPersistentSubscription
    # ACKs still being persisted (the connection's tasks, adopted): CLOSE_CONSUMER is answered
    # only after them.
    acks: TaskSet = field(default_factory=lambda: TaskSet("acks"))


async def _release(ref: ConsumerRef) -> None:
    """The consumer is gone (closed or disconnected)."""
    await ref.acks.drain(_ACK_DRAIN_S)
    ref.consumer.closed = True
    if isinstance(ref.topic, PersistentTopic):
        assert isinstance(ref.subscription, PersistentSubscription)
        await ref.topic.consumer_left(ref.subscription, ref.consumer)
    else:
        assert isinstance(ref.subscription, NonPersistentSubscription)
        ref.topic.consumer_left(ref.subscription, ref.consumer)


def _idle(topic: PersistentTopic | NonPersistentTopic) -> bool:
    """No producers, no connected consumers, no stored data: a consumer may set the schema."""
    if topic.producers or any(sub.consumers for sub in topic.subscriptions.values()):
        return False
    return not isinstance(topic, PersistentTopic) or topic.storage_size == 0


class ConsumerRequests:
    """One connection's consumers by id, and the consumer commands that use them."""

    def __init__(self, cnx: TransportCnx, service: BrokerService) -> None:
        self._cnx = cnx
        self._service = service
        self._consumers: dict[int, ConsumerRef] = {}

    async def handle(self, frame: Frame) -> bool:
        """Handle a consumer command; False if ``frame`` is not one."""
        cmd = frame.command
        kind = cmd.type
        if kind == T.FLOW:
            self._flow(cmd.flow)
        elif kind == T.ACK:
            await self._ack(cmd.ack)
        elif kind == T.SUBSCRIBE:
            await self._subscribe(cmd.subscribe)
        elif kind == T.REDELIVER_UNACKNOWLEDGED_MESSAGES:
            self._redeliver(cmd.redeliver_unacknowledged_messages)
        elif kind == T.CLOSE_CONSUMER:
            await self._close_consumer(cmd.close_consumer)
        elif kind == T.UNSUBSCRIBE:
            await self._unsubscribe(cmd.unsubscribe)
        elif kind == T.SEEK:
            await self._seek(cmd.seek)
        elif kind == T.GET_LAST_MESSAGE_ID:
            await self._last_message_id(cmd.get_last_message_id)
        elif kind == T.GET_TOPICS_OF_NAMESPACE:
            await self._topics_of_namespace(cmd.get_topics_of_namespace)
        elif kind == T.CONSUMER_STATS:
            self._consumer_stats(cmd.consumer_stats)
        else:
            return False
        return True

    def forget(self, consumer_id: int) -> None:
        """The broker closed the consumer (CLOSE_CONSUMER sent to the client)."""
        self._consumers.pop(consumer_id, None)

    async def release_all(self) -> None:
        """The connection is gone: every consumer leaves its subscription."""
        for ref in list(self._consumers.values()):
            await _release(ref)
        self._consumers.clear()

    def _ref(self, consumer_id: int) -> ConsumerRef:
        ref = self._consumers.get(consumer_id)
        if ref is None:
            raise ConsumerNotFound(consumer_id)
        return ref

    # ------------------------------------------------------------------ SUBSCRIBE
    async def _subscribe(self, request: pb.CommandSubscribe) -> None:
        cnx = self._cnx
        consumer_id = request.consumer_id
        if consumer_id in self._consumers:
            cnx.write_command(commands.success(request.request_id))
            return

        async def work() -> pb.BaseCommand:
            name = TopicName.parse(request.topic)
            await cnx.authorize(name, CONSUME, request.subscription)
            topic = await self._service.get_topic(name, by_client=True)
            schema = schema_of(request.schema if request.HasField("schema") else None)
            if schema is not None and schema.type != SchemaType.AUTO_CONSUME:
                await self._service.schemas.check_consumer(topic.name, schema, _idle(topic))
            consumer = Consumer(
                cnx,
                consumer_id,
                request.consumer_name or f"consumer-{consumer_id}",
                request.subscription,
                request.sub_type,
                partition=topic.name.partition_index,
                priority=request.priority_level,
                read_compacted=request.read_compacted,
                key_shared=_key_shared_meta(request),
            )
            sub: PersistentSubscription | NonPersistentSubscription
            if isinstance(topic, PersistentTopic):
                initial = (
                    InitialPosition.EARLIEST
                    if request.initial_position == pb.CommandSubscribe.Earliest
                    else InitialPosition.LATEST
                )
                start = (
                    MessageId.from_proto(request.start_message_id)
                    if request.HasField("start_message_id")
                    else None
                )
                sub = await topic.subscribe(
                    consumer,
                    durable=request.durable,
                    initial_position=initial,
                    start_message_id=start,
                )
            else:
                sub = topic.subscribe(consumer)
            self._consumers[consumer_id] = ConsumerRef(consumer, topic, sub)
            if not cnx.is_open:
                await _release(self._consumers.pop(consumer_id))
            log.info(
                "consumer_subscribed",
                client=cnx.address,
                topic=request.topic,
                subscription=request.subscription,
                sub_type=request.sub_type,
            )
            return commands.success(request.request_id)

        await cnx.request(request.request_id, work)

    # ------------------------------------------------------------------ FLOW, ACK, REDELIVER
    def _flow(self, request: pb.CommandFlow) -> None:
        ref = self._consumers.get(request.consumer_id)
        if ref is not None:
            ref.subscription.flow(ref.consumer, request.message_permits)

    async def _ack(self, request: pb.CommandAck) -> None:
        """An ACK that protobuf parsed: one with ack sets, first chunk ids or properties (the
        broker's reader hands the usual ones to :meth:`ack`)."""
        # Positions and ack-set masks straight from the wire ids: only their entry positions
        # matter here (no MessageId per id). Wire ids are uint64; only those above INT64_MAX
        # (e.g. -1) need the signed conversion.
        ids = [
            (
                _new_tuple(
                    Position,
                    (
                        lid if (lid := m.ledger_id) <= INT64_MAX else to_signed64(lid),
                        eid if (eid := m.entry_id) <= INT64_MAX else to_signed64(eid),
                    ),
                ),
                ack_set_to_mask(words) if (words := m.ack_set) else None,
            )
            for m in request.message_id
        ]
        ack_type = request.ack_type

        async def apply(sub: PersistentSubscription, consumer: Consumer) -> None:
            await sub.acknowledge(consumer, ack_type, ids)

        request_id = request.request_id if request.HasField("request_id") else None
        await self._acknowledge(request.consumer_id, request_id, apply)

    async def ack(self, frame: AckFrame) -> None:
        """An ACK of whole entries read from the wire (the usual ACK): its positions are built
        from the id pairs without a Python step per id."""
        positions = list(map(position_of_pair, frame.entries))

        async def apply(sub: PersistentSubscription, consumer: Consumer) -> None:
            if frame.cumulative:
                ids = [(pos, None) for pos in positions]
                await sub.acknowledge(consumer, pb.CommandAck.Cumulative, ids)
            else:
                await sub.acknowledge_entries(positions)

        await self._acknowledge(frame.consumer_id, frame.request_id, apply)

    async def _acknowledge(
        self,
        consumer_id: int,
        request_id: int | None,
        apply: Callable[[PersistentSubscription, Consumer], Awaitable[None]],
    ) -> None:
        """Apply an ACK to its consumer's subscription in a task of the consumer's; ACK_RESPONSE
        after it when ``request_id`` is set. An unknown consumer's, or one on a non-persistent
        topic, is only answered."""
        cnx = self._cnx
        ref = self._consumers.get(consumer_id)
        if ref is None or not isinstance(ref.subscription, PersistentSubscription):
            if request_id is not None:
                cnx.write_command(commands.ack_response(consumer_id, request_id))
            return
        sub, consumer = ref.subscription, ref.consumer

        async def work() -> None:
            await apply(sub, consumer)
            if request_id is not None:
                cnx.write_command(commands.ack_response(consumer_id, request_id))

        ref.acks.adopt(await cnx.spawn(work()))

    def _redeliver(self, request: pb.CommandRedeliverUnacknowledgedMessages) -> None:
        ref = self._consumers.get(request.consumer_id)
        if ref is None or not isinstance(ref.subscription, PersistentSubscription):
            return
        ids = [MessageId.from_proto(m) for m in request.message_ids]
        epoch = request.consumer_epoch if request.HasField("consumer_epoch") else None
        ref.subscription.redeliver(ref.consumer, ids, epoch)

    # ------------------------------------------------------------------ CLOSE, UNSUBSCRIBE
    async def _close_consumer(self, request: pb.CommandCloseConsumer) -> None:
        ref = self._consumers.pop(request.consumer_id, None)
        if ref is None:
            self._cnx.write_command(commands.success(request.request_id))
            return

        async def work() -> pb.BaseCommand:
            await _release(ref)
            return commands.success(request.request_id)

        await self._cnx.request(request.request_id, work)

    async def _unsubscribe(self, request: pb.CommandUnsubscribe) -> None:
        async def work() -> pb.BaseCommand:
            ref = self._ref(request.consumer_id)
            if isinstance(ref.topic, PersistentTopic):
                assert isinstance(ref.subscription, PersistentSubscription)
                await ref.topic.unsubscribe(ref.subscription, ref.consumer)
            else:
                await _release(ref)
            self._consumers.pop(request.consumer_id, None)
            ref.consumer.closed = True
            return commands.success(request.request_id)

        await self._cnx.request(request.request_id, work)

    # ------------------------------------------------------------------ SEEK, queries
    async def _seek(self, request: pb.CommandSeek) -> None:
        async def work() -> pb.BaseCommand:
            ref = self._ref(request.consumer_id)
            if not isinstance(ref.topic, PersistentTopic):
                raise NotAllowed("seek is not supported on non-persistent topics")
            assert isinstance(ref.subscription, PersistentSubscription)
            if request.HasField("message_publish_time"):
                pos = await ref.topic.position_for_time(request.message_publish_time)
            else:
                pos = ref.topic.start_position(MessageId.from_proto(request.message_id))
            await ref.subscription.reset_cursor(pos)
            log.info("subscription_seek", topic=str(ref.topic.name),
                     subscription=ref.subscription.name, position=str(pos))  # fmt: skip
            return commands.success(request.request_id)

        await self._cnx.request(request.request_id, work)

    async def _last_message_id(self, request: pb.CommandGetLastMessageId) -> None:
        async def work() -> pb.BaseCommand:
            ref = self._ref(request.consumer_id)
            if not isinstance(ref.topic, PersistentTopic):
                raise NotAllowed("no last message id on non-persistent topics")
            assert isinstance(ref.subscription, PersistentSubscription)
            partition = ref.topic.name.partition_index
            last = (await ref.topic.last_message_id()).with_partition(partition)
            mark = ref.subscription.cursor.mark_delete_position
            return commands.get_last_message_id_response(
                request.request_id,
                last,
                mark_delete_position=MessageId(mark.ledger_id, mark.entry_id, partition=partition),
            )

        await self._cnx.request(request.request_id, work)

    async def _topics_of_namespace(self, request: pb.CommandGetTopicsOfNamespace) -> None:
        async def work() -> pb.BaseCommand:
            namespace = NamespaceName.parse(request.namespace)
            await self._cnx.authorize_namespace(namespace, LOOKUP)
            topics: list[str] = []
            if request.mode in (Mode.PERSISTENT, Mode.ALL):
                topics += await self._service.list_topics(namespace, persistent=True)
            if request.mode in (Mode.NON_PERSISTENT, Mode.ALL):
                topics += await self._service.list_topics(namespace, persistent=False)
            return commands.get_topics_of_namespace_response(request.request_id, topics)

        await self._cnx.request(request.request_id, work)

    def _consumer_stats(self, request: pb.CommandConsumerStats) -> None:
        cnx = self._cnx
        ref = self._consumers.get(request.consumer_id)
        if ref is None:
            cnx.write_command(
                commands.consumer_stats_error(
                    request.request_id, pb.ConsumerNotFound, "consumer not found"
                )
            )
            return
        consumer = ref.consumer
        backlog = (
            ref.subscription.backlog if isinstance(ref.subscription, PersistentSubscription) else 0
        )
        cnx.write_command(
            commands.consumer_stats_response(
                request.request_id,
                consumer_name=consumer.name,
                available_permits=consumer.permits,
                unacked_messages=consumer.unacked_messages,
                address=cnx.address,
                type_=pb.CommandSubscribe.SubType.Name(consumer.sub_type),
                msg_backlog=backlog,
            )
        )


def _key_shared_meta(request: pb.CommandSubscribe) -> KeySharedMeta | None:
    if not request.HasField("key_shared_meta"):
        return None
    meta = request.key_shared_meta
    return KeySharedMeta(
        mode=KeySharedMode(meta.key_shared_mode),
        hash_ranges=tuple(HashRange(r.start, r.end) for r in meta.hash_ranges),
        allow_out_of_order_delivery=meta.allow_out_of_order_delivery,
    )
