"""The producer side of a ServerCnx: PRODUCER, SEND and CLOSE_PRODUCER.

:class:`ProducerRequests` owns one connection's producers by id and its SENDs in flight; the
connection (:mod:`.connection`) calls :meth:`ProducerRequests.handle` from its reader, in
arrival order, and :meth:`ProducerRequests.queue_send` for a SEND it hands over without a
coroutine (a producer's consecutive SENDs go to it as one run at
:meth:`ProducerRequests.flush_sends`). A SEND comes as a
:class:`~magnetar.protocol.hand_decoded.SendFrame`, the fields the publish path reads. It sees
the connection only through :class:`~.transport_cnx.TransportCnx`;
:class:`~magnetar.broker.consumer_requests.ConsumerRequests` is its consumer-side twin.

PRODUCER and CLOSE_PRODUCER are requests answered by request id from a task of the connection;
a PRODUCER for an id that exists is answered at once (a retried request), one for an id being
created gets ServiceNotReady. SEND is applied inline (order is everything) and answered by the
producer (receipts in sequence order, :mod:`.producer`). A SEND for a producer the broker or the
client closed is dropped; one for an id never created closes the connection. A PRODUCER with a
schema gets its version from the schema registry (:mod:`magnetar.broker.schemas`) before it
joins the topic, and PRODUCER_SUCCESS carries it; a refused schema is ERROR(IncompatibleSchema).

Bounds: at most ``max_pending_sends_per_connection`` SENDs in flight; :meth:`send` waits for
a slot before the next SEND, so the reader stops reading (TCP backpressure on the producer).

Stop: :meth:`ProducerRequests.stop_taking` (a stopping broker) publishes no further SEND, not
even one waiting for a slot, and :meth:`ProducerRequests.answered` returns once every SEND
taken has been answered, so that the connection closes only after the receipts of what was
stored (an entry stored but unanswered is resent by the client: stored twice).

Concurrency: on the broker's loop; :meth:`release_all` runs once, after the connection's
tasks are done.
"""

from __future__ import annotations

import asyncio
import itertools
import secrets

from magnetar.authorization import PRODUCE
from magnetar.broker.deduplication import MessageDeduplication
from magnetar.broker.errors import MetadataProblem, TopicTerminated
from magnetar.broker.persistent_topic import PersistentTopic
from magnetar.broker.producer import Producer
from magnetar.broker.producer_access import AccessMode, ProducerRequest
from magnetar.broker.schemas import schema_of
from magnetar.broker.service import BrokerService
from magnetar.broker.transport_cnx import TransportCnx
from magnetar.naming import TopicName
from magnetar.protocol import commands
from magnetar.protocol.frame import Frame
from magnetar.protocol.hand_decoded import SendFrame
from magnetar.schema import encode_version
from magnetar.telemetry import get_logger
from magnetar.wire import pulsar_api_pb2 as pb

log = get_logger(__name__)

T = pb.BaseCommand
_producer_names = itertools.count()
# Generated producer names are {cluster}-{process tag}-{n}: unique across restarts and brokers
# (Pulsar's are {cluster}-{distributed counter}-{n}), since deduplication on a remote cluster
# files replicated messages under them; a name reused with restarted sequence ids would be
# taken for duplicates there.
_PROCESS_TAG = secrets.token_hex(3)


class ProducerRequests:
    """One connection's producers by id, and the producer commands that change them."""

    def __init__(self, cnx: TransportCnx, service: BrokerService) -> None:
        self._cnx = cnx
        self._service = service
        self._producers: dict[int, Producer] = {}
        self._pending: set[int] = set()  # ids whose PRODUCER request is running
        self._closed: set[int] = set()  # ids closed here: their late SENDs are dropped
        self._max_sends = service.config.max_pending_sends_per_connection
        self._sends = 0  # SENDs in flight (their producers release the slots: _sends_done)
        self._send_room: asyncio.Future[None] | None = None  # the reader waiting for a slot
        # SENDs queued by queue_send (one producer's, in frame order) until flush_sends
        self._run: list[SendFrame] = []
        self._run_producer: Producer | None = None
        self._taking = True  # False once the broker stops: no further SEND is published
        self._answered: asyncio.Future[None] | None = None  # answered() waiting for _sends == 0

    async def handle(self, frame: Frame) -> bool:
        """Handle a producer command; False if ``frame`` is not one."""
        cmd = frame.command
        kind = cmd.type
        if kind == T.PRODUCER:
            await self._producer(cmd.producer)
        elif kind == T.CLOSE_PRODUCER:
            await self._close_producer(cmd.close_producer)
        else:
            return False
        return True

    def forget(self, producer_id: int) -> None:
        """The broker closed the producer (CLOSE_PRODUCER sent to the client)."""
        if self._producers.pop(producer_id, None) is not None:
            self._closed.add(producer_id)

    async def release_all(self) -> None:
        """The connection is gone: detach and close every producer."""
        producers = list(self._producers.values())
        for producer in producers:
            await self._release(producer)
        self._producers.clear()

    # ------------------------------------------------------------------ PRODUCER
    async def _producer(self, request: pb.CommandProducer) -> None:
        cnx = self._cnx
        producer_id = request.producer_id
        existing = self._producers.get(producer_id)
        if existing is not None:
            cnx.write_command(self._success(request.request_id, existing))
            return
        if producer_id in self._pending:
            cnx.write_command(commands.error(request.request_id, pb.ServiceNotReady,
                                             "producer is already being created"))  # fmt: skip
            return
        self._pending.add(producer_id)

        async def work() -> pb.BaseCommand:
            try:
                topic_name = TopicName.parse(request.topic)
                await cnx.authorize(topic_name, PRODUCE)  # before loading: no auto-creation
                topic = await self._service.get_topic(topic_name, by_client=True)
                name = request.producer_name or (
                    f"{self._service.config.cluster_name}-{_PROCESS_TAG}-{next(_producer_names)}"
                )
                dedup = await self._admit(topic)
                schema = schema_of(request.schema if request.HasField("schema") else None)
                schema_version = (
                    b""
                    if schema is None
                    else encode_version(await self._service.schemas.add(topic.name, schema))
                )
                producer = Producer(
                    cnx,
                    producer_id,
                    name,
                    str(topic.name),
                    topic.publish,
                    deduplication=dedup,
                    sends_done=self._sends_done,
                )
                access = ProducerRequest(
                    name,
                    AccessMode(request.producer_access_mode),
                    request.topic_epoch if request.HasField("topic_epoch") else None,
                )

                def queued() -> None:  # WaitForExclusive: "created, not ready yet"
                    cnx.write_command(
                        commands.producer_success(request.request_id, name, producer_ready=False)
                    )

                producer.schema_version = schema_version
                producer.topic_epoch = await topic.add_producer(producer, access, queued)
                if producer_id not in self._pending:  # closed by the client while it waited
                    await self._release(producer)
                    raise MetadataProblem("producer was closed before it was ready")
                self._producers[producer_id] = producer
                self._closed.discard(producer_id)
            finally:
                self._pending.discard(producer_id)
            log.info("producer_created", client=cnx.address, topic=request.topic, name=name)
            return self._success(request.request_id, producer)

        await cnx.request(request.request_id, work)

    @staticmethod
    def _success(request_id: int, producer: Producer) -> pb.BaseCommand:
        return commands.producer_success(
            request_id,
            producer.name,
            last_sequence_id=_last_sequence_id(producer),
            topic_epoch=producer.topic_epoch,
            schema_version=producer.schema_version,
        )

    async def _admit(self, topic: object) -> MessageDeduplication | None:
        """Backlog quota check (may refuse) and deduplication readiness, persistent topics only."""
        if not isinstance(topic, PersistentTopic):
            return None
        if topic.is_terminated:
            raise TopicTerminated(str(topic.name))
        await self._service.backlog_quota.check_new_producer(topic)
        await topic.deduplication.wait_ready()
        return topic.deduplication

    # ------------------------------------------------------------------ SEND
    async def send(self, frame: SendFrame) -> None:
        """Hand a SEND to its producer once a slot is free (the reader awaits this when
        :meth:`take_send` found no free slot, so it stops reading)."""
        while self._sends >= self._max_sends:  # stop reading until a SEND finishes
            room: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._send_room = room
            try:
                await room
            finally:
                self._send_room = None
        if self._taking:  # else dropped unanswered: the client resends it to the next broker
            self.send_now(frame)

    def send_now(self, frame: SendFrame) -> None:
        """Hand a SEND to its producer (call with a free slot, in frame order)."""
        self.queue_send(frame)
        self.flush_sends()

    def take_send(self, frame: SendFrame) -> bool:
        """:meth:`queue_send` if a slot is free: True once taken (queued, or dropped: a late
        SEND of a producer closed here). False when no slot is free (nothing done:
        :meth:`send` waits for one) or when taking it closed the connection (its producer is
        unknown, or publishing the run before it failed)."""
        if self._sends >= self._max_sends:
            return False
        producer = self._producers.get(frame.producer_id)
        if producer is None or producer is not self._run_producer:
            self.queue_send(frame)  # the unusual cases: it flushes, drops or closes
            return self._cnx.is_open
        self._queue(frame)
        return True

    def queue_send(self, frame: SendFrame) -> None:
        """:meth:`send_now`, deferred: consecutive SENDs of one producer (one socket read's)
        are handed over together by :meth:`flush_sends`, which the reader calls before it
        handles any other frame and when the read's frames are done. The SEND holds its slot
        from here."""
        producer = self._producers.get(frame.producer_id)
        if producer is None:
            self.flush_sends()  # the SENDs before it go first, as they would have
            if frame.producer_id in self._closed:
                return
            log.warning("send_unknown_producer", client=self._cnx.address,
                        producer=frame.producer_id)  # fmt: skip
            self._cnx.close()
            return
        if producer is not self._run_producer:
            self.flush_sends()
            self._run_producer = producer
        self._queue(frame)

    def _queue(self, frame: SendFrame) -> None:
        """Queue ``frame`` in the run (its producer's) and take its slot."""
        self._sends += 1
        self._run.append(frame)

    def flush_sends(self) -> None:
        """Publish the SENDs :meth:`queue_send` holds, in order."""
        run = self._run
        if run:
            self._run = []
            producer = self._run_producer
            assert producer is not None
            producer.publish_frames(run)

    def _sends_done(self, count: int) -> None:
        """``count`` SENDs were answered (or dropped): their slots are free."""
        self._sends -= count
        room = self._send_room
        if room is not None and not room.done():
            room.set_result(None)
        answered = self._answered
        if answered is not None and not self._sends and not answered.done():
            answered.set_result(None)

    # ------------------------------------------------------------------ stop
    def stop_taking(self) -> None:
        """The broker is stopping: publish no further SEND (the reader takes no further frame;
        one waiting for a slot is dropped, unanswered, and the client resends it)."""
        self._taking = False

    async def answered(self) -> None:
        """Return once every SEND taken has been answered (its receipt or error written)."""
        while self._sends:
            if self._answered is None or self._answered.done():
                self._answered = asyncio.get_running_loop().create_future()
            await self._answered

    # ------------------------------------------------------------------ CLOSE_PRODUCER
    async def _close_producer(self, request: pb.CommandCloseProducer) -> None:
        producer = self._producers.pop(request.producer_id, None)
        if producer is None:
            # One still being created (e.g. waiting for exclusive access) is dropped once it is.
            self._pending.discard(request.producer_id)
            self._cnx.write_command(commands.success(request.request_id))
            return
        self._closed.add(request.producer_id)

        async def work() -> pb.BaseCommand:
            await self._release(producer)
            return commands.success(request.request_id)

        await self._cnx.request(request.request_id, work)

    async def _release(self, producer: Producer) -> None:
        topic = self._service.loaded(TopicName.parse(producer.topic))
        if topic is not None:
            topic.remove_producer(producer)
        await producer.close()


def _last_sequence_id(producer: Producer) -> int:
    """What PRODUCER_SUCCESS tells a (re)connecting producer it last stored (-1: unknown)."""
    dedup = producer.deduplication
    return -1 if dedup is None else dedup.last_sequence_id(producer.name)
