"""A persistent topic: a managed ledger, its producers and its subscriptions.

Entries are the SEND bytes as received (``[0x0e01][crc][meta_size][meta][payload]``); the
topic never rewrites them. Durable subscriptions are the managed ledger's durable cursors
(re-created as subscriptions when the topic loads); readers get non-durable cursors and a
subscription that disappears with its consumer.

Producers join through :class:`~magnetar.broker.producer_access.ProducerAccess` (access modes
and the topic epoch, persisted in the managed ledger's property ``pulsar.topic.epoch``).
:meth:`PersistentTopic.terminate` ends the log for good: publishing stops, in-flight adds finish,
the last entry is recorded in the managed ledger's info (it survives restarts), producers are
disconnected (their reconnect gets TopicTerminatedError) and subscriptions tell consumers that
have read everything (REACHED_END_OF_TOPIC, to clients that understand it).

Delayed delivery: ``delayed_delivery`` is the effective namespace policy (the service keeps it
current); subscriptions read it on every dispatch step. While it is active with a
``maxDeliveryDelayInMillis`` > 0, a SEND whose ``deliver_at_time - publish_time`` exceeds it
is refused with NotAllowedError "Exceeds max allowed delivery delay", as Pulsar does (only then
is the metadata of each SEND parsed).

Start positions (readers) and seek targets follow Pulsar: earliest (-1,-1) is the first entry,
latest (INT64_MAX, INT64_MAX) the end, any other id names the entry to start at — the client
drops what precedes its start id (inclusive or not), so the broker starts at the entry itself.

Concurrency: on the broker's loop; owned by the BrokerService, which closes it.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable

from magnetar.broker.compaction import COMPACTION_CURSOR, TopicCompaction
from magnetar.broker.consumer import Consumer
from magnetar.broker.deduplication import CURSOR_NAME as DEDUP_CURSOR
from magnetar.broker.deduplication import DeduplicationConfig, MessageDeduplication
from magnetar.broker.entry import entry_info, entry_metadata
from magnetar.broker.errors import (
    MetadataProblem,
    NotAllowed,
    ProducerBusy,
    SubscriptionNotFound,
    TopicClosed,
    TopicTerminated,
)
from magnetar.broker.producer import Producer, Published, RunPublished
from magnetar.broker.producer_access import EPOCH_PROPERTY, ProducerAccess, ProducerRequest
from magnetar.broker.replication import ReplicationContext, TopicReplicators, is_replicator
from magnetar.broker.subscription import PersistentSubscription
from magnetar.ids import EntryId
from magnetar.managed_ledger import InitialPosition, ManagedCursor, ManagedLedger, Position
from magnetar.naming import TopicName
from magnetar.policies import DelayedDeliveryPolicies
from magnetar.protocol.message_id import EARLIEST, LATEST, MessageId
from magnetar.telemetry import get_logger
from magnetar.wire import pulsar_api_pb2 as pb

log = get_logger(__name__)

_SCAN_BATCH = 200
_TERMINATE_DRAIN_S = 10.0  # in-flight publishes a terminate waits for
_CLOSE_DRAIN_S = 1.0  # and a close (an unload, a broker's stop): adds take a journal fsync


class PersistentTopic:
    def __init__(
        self,
        name: TopicName,
        ml: ManagedLedger,
        *,
        deduplication: DeduplicationConfig | None = None,
        delayed_delivery: DelayedDeliveryPolicies | None = None,
        max_delayed: int = 1_000_000,
        replication: ReplicationContext | None = None,
    ) -> None:
        self.name = name
        self.ml = ml
        self.delayed_delivery = delayed_delivery or DelayedDeliveryPolicies()
        self._max_delayed = max_delayed
        self.deduplication = MessageDeduplication(
            str(name), ml, deduplication or DeduplicationConfig()
        )
        self.producers: dict[str, Producer] = {}
        self.subscriptions: dict[str, PersistentSubscription] = {}
        self._closing = False
        self._terminating = False
        stored_epoch = ml.properties.get(EPOCH_PROPERTY)
        self.access = ProducerAccess(
            str(name), None if stored_epoch is None else int(stored_epoch), self._persist_epoch
        )
        self.messages_in = 0
        self.bytes_in = 0
        self.compaction = TopicCompaction(str(name), ml)
        self.replication = None if replication is None else TopicReplicators(name, ml, replication)
        for cursor_name, cursor in ml.cursors.items():
            if cursor_name in (DEDUP_CURSOR, COMPACTION_CURSOR) or is_replicator(cursor_name):
                continue  # dedup snapshot, compaction horizon, replicators: no subscriptions
            self.subscriptions[cursor_name] = self._new_subscription(
                cursor_name, cursor, pb.CommandSubscribe.Exclusive
            )

    def _new_subscription(
        self,
        name: str,
        cursor: ManagedCursor,
        sub_type: pb.CommandSubscribe.SubType.ValueType,
        durable: bool = True,
    ) -> PersistentSubscription:
        return PersistentSubscription(
            str(self.name),
            name,
            self.ml,
            cursor,
            sub_type,
            durable=durable,
            partition_index=self.name.partition_index,
            delayed_delivery=lambda: self.delayed_delivery,
            max_delayed=self._max_delayed,
        )

    @property
    def storage_size(self) -> int:
        """Bytes of the topic's ledgers: the closed ones as persisted, plus what the ledger
        being written has confirmed (Pulsar's storageSize)."""
        return sum(li.size for li in self.ml.ledgers) + self.ml.current_ledger_bytes

    @property
    def is_open(self) -> bool:
        return not self._closing

    @property
    def is_terminated(self) -> bool:
        return self._terminating or self.ml.terminated_position is not None

    def _check_open(self) -> None:
        if self._closing:
            raise TopicClosed(str(self.name))

    def _check_publishable(self) -> None:
        self._check_open()
        if self.is_terminated:
            raise TopicTerminated(str(self.name))

    # ------------------------------------------------------------------ producers
    async def add_producer(
        self,
        producer: Producer,
        request: ProducerRequest | None = None,
        on_queued: Callable[[], None] = lambda: None,
    ) -> int | None:
        """Admit ``producer`` under its access mode (may wait: WaitForExclusive); the topic
        epoch to report. Raises TopicTerminated, ProducerBusy, ProducerFenced, TopicClosed."""
        request = request or ProducerRequest(producer.name)
        self._check_publishable()
        if producer.name in self.producers:
            raise ProducerBusy(str(self.name), producer.name)
        epoch = await self.access.admit(
            request, len(self.producers), self._fence_producers, on_queued
        )
        try:
            self._check_publishable()
            if producer.name in self.producers:
                raise ProducerBusy(str(self.name), producer.name)
        except BaseException:
            self.access.released(producer.name, len(self.producers))
            raise
        self.producers[producer.name] = producer
        producer.publish_nowait = self.publish_nowait  # the task-free publish path
        producer.group_publisher = self  # and its form for a run of SENDs
        self.deduplication.producer_added(producer.name)
        return epoch

    def remove_producer(self, producer: Producer) -> None:
        if self.producers.get(producer.name) is producer:
            del self.producers[producer.name]
            self.deduplication.producer_removed(producer.name)
            self.access.released(producer.name, len(self.producers))

    def _fence_producers(self) -> None:
        """ExclusiveWithFencing: close every connected producer (its reconnect is fenced)."""
        for producer in list(self.producers.values()):
            producer.close_by_broker()
            del self.producers[producer.name]
            self.deduplication.producer_removed(producer.name)
            log.info("producer_fenced", topic=str(self.name), producer=producer.name)

    async def _persist_epoch(self, epoch: int) -> None:
        await self.ml.set_property(EPOCH_PROPERTY, str(epoch))

    def _delivery_delay_limit(self) -> int:
        """maxDeliveryDelayInMillis while it applies (an active policy with a limit), else 0."""
        policy = self.delayed_delivery
        limit = policy.max_delivery_delay_in_millis
        return limit if limit > 0 and policy.active else 0

    def _check_delivery_delay(self, stored: bytes) -> None:
        """NotAllowed if ``stored`` asks for a longer delay than maxDeliveryDelayInMillis."""
        limit = self._delivery_delay_limit()
        if not limit:
            return
        metadata = entry_metadata(stored)
        if metadata.HasField("deliver_at_time") and (
            metadata.deliver_at_time - metadata.publish_time > limit
        ):
            raise NotAllowed("Exceeds max allowed delivery delay")

    async def publish(self, stored: bytes, num_messages: int) -> MessageId:
        self._check_publishable()
        self._check_delivery_delay(stored)
        return self._stored(await self.ml.add_entry(stored), stored, num_messages)

    def _stored(self, pos: Position, stored: bytes, num_messages: int) -> MessageId:
        """Count a durable add (either publish path) and name it."""
        self.messages_in += num_messages
        self.bytes_in += len(stored)
        return MessageId(pos.ledger_id, pos.entry_id)

    def publish_nowait(
        self,
        stored: bytes,
        num_messages: int,
        on_added: Published,
        facts: object = None,
        stored_crc: int = -1,
    ) -> bool:
        """Add ``stored`` without a task: ``on_added(position, error)`` is called once the
        entry is durable (or failed). False: the managed ledger has no free add slot and
        nothing was done (use :meth:`publish`). Raises TopicClosed, TopicTerminated, NotAllowed
        (delivery delay) / the ledger's errors. ``facts`` and ``stored_crc``: as
        :meth:`publish_run` has them."""
        self._check_publishable()
        self._check_delivery_delay(stored)
        added = functools.partial(self._added, len(stored), num_messages, on_added)
        return self.ml.add_entry_callback(stored, added, facts, stored_crc)

    # The run-of-SENDs path (Producer.publish_frames): slots for the run first, then each SEND's
    # deduplication verdict and checks in order, then the run's adds in one call.
    def reserve_publish(self, count: int) -> int:
        """Add slots for up to ``count`` publishes taken at once (0: use :meth:`publish_nowait`
        for each). Raises TopicClosed, TopicTerminated / the ledger's errors."""
        self._check_publishable()
        return self.ml.reserve_adds(count)

    def publish_check(self) -> Callable[[bytes], None] | None:
        """The per-entry checks of :meth:`publish_nowait` (NotAllowed: delivery delay) as one
        call per entry, or None while no check applies (no delivery delay limit): a run then
        skips a call per entry."""
        return self._check_delivery_delay if self._delivery_delay_limit() else None

    def publish_run(
        self,
        stored: list[bytes],
        num_messages: list[int],
        on_added: RunPublished,
        unused: int,
        facts: list[object] | None = None,
        stored_crcs: list[int] | None = None,
    ) -> None:
        """:meth:`publish_nowait` for each of ``stored`` (in order) on the slots
        :meth:`reserve_publish` took (``unused`` of them are given back), reporting to one
        ``on_added``: ``(index, positions, None)`` per stretch of durable entries from
        ``stored[index]`` on, ``(index, None, error)`` for a failed one (the managed ledger's
        ``add_reserved_run``). ``facts``: what the dispatcher reads of each entry, where the
        SEND's scan read it (kept with the cached entry); ``stored_crcs``: each entry's
        ``crc32c`` where the scan checked it (-1 where not), for the entry digests."""
        self.ml.add_reserved_run(
            stored,
            functools.partial(self._run_added, stored, num_messages, on_added),
            unused,
            facts,
            stored_crcs,
        )

    def _run_added(
        self,
        stored: list[bytes],
        num_messages: list[int],
        on_added: RunPublished,
        index: int,
        positions: list[Position] | None,
        error: BaseException | None,
    ) -> None:
        if positions is not None:
            end = index + len(positions)
            self.messages_in += sum(num_messages[index:end])
            size = 0
            for entry in stored[index:end]:
                size += len(entry)
            self.bytes_in += size
        on_added(index, positions, error)

    def _added(
        self,
        size: int,
        num_messages: int,
        on_added: Published,
        position: Position | None,
        error: BaseException | None,
    ) -> None:
        if position is not None:
            self.messages_in += num_messages
            self.bytes_in += size
        on_added(position, error)

    async def update_replication(self, clusters: frozenset[str]) -> None:
        """Run one replicator per other cluster of the namespace's ``replication_clusters``."""
        if self.replication is not None and self.is_open:
            await self.replication.update(clusters)

    async def update_deduplication(self, namespace_setting: bool | None) -> None:
        """Apply the namespace's ``deduplicationEnabled`` (None: the broker default)."""
        enabled = (
            self.deduplication.config.enabled if namespace_setting is None else namespace_setting
        )
        if self.is_open:
            await self.deduplication.set_enabled(enabled)

    # ------------------------------------------------------------------ subscriptions
    def start_position(self, mid: MessageId) -> Position:
        """The entry a reader or a seek to ``mid`` starts at (the end if past the last)."""
        layout = self.ml.layout
        end = layout.end_position()
        if mid.entry == EARLIEST.entry or mid.ledger_id < 0:
            return layout.first_at_or_after(layout.first_position()) or end
        if mid.entry == LATEST.entry:
            return end
        pos = Position(mid.ledger_id, EntryId(max(mid.entry_id, 0)))  # type: ignore[arg-type]
        return min(pos, end)

    async def subscribe(
        self,
        consumer: Consumer,
        *,
        durable: bool,
        initial_position: InitialPosition,
        start_message_id: MessageId | None,
    ) -> PersistentSubscription:
        self._check_open()
        compacted = consumer.read_compacted
        if compacted and consumer.sub_type in (
            pb.CommandSubscribe.Shared,
            pb.CommandSubscribe.Key_Shared,
        ):
            raise NotAllowed("readCompacted only allowed on failover or exclusive subscriptions")
        name = consumer.subscription
        if name == COMPACTION_CURSOR:
            raise NotAllowed(f"subscription name {name!r} is reserved for topic compaction")
        if is_replicator(name):
            raise NotAllowed(f"subscription name {name!r} is reserved for geo-replication")
        sub = self.subscriptions.get(name)
        if sub is None:
            if durable:
                cursor = await self.ml.open_cursor(name, initial_position)
            else:
                if start_message_id is None:
                    start_message_id = (
                        EARLIEST if initial_position is InitialPosition.EARLIEST else LATEST
                    )
                cursor = self.ml.new_non_durable_cursor(self.start_position(start_message_id))
            self._check_open()
            sub = self.subscriptions.get(name)
            if sub is None:
                sub = self._new_subscription(name, cursor, consumer.sub_type, durable)
                self.subscriptions[name] = sub
        sub.add_consumer(consumer)
        if len(sub.consumers) == 1:
            # The first consumer decides, as it decides the subscription type; the reads keep
            # their place in the compacted view from one consumer to the next.
            if not compacted:
                sub.compacted = None
            elif sub.compacted is None:
                sub.compacted = self.compaction.reads(sub.cursor)
        return sub

    async def consumer_left(self, sub: PersistentSubscription, consumer: Consumer) -> None:
        """The consumer closed or its connection went away."""
        sub.remove_consumer(consumer)
        if not sub.durable and not sub.consumers:
            await self._drop_subscription(sub)

    async def _drop_subscription(self, sub: PersistentSubscription) -> None:
        if self.subscriptions.get(sub.name) is sub:
            del self.subscriptions[sub.name]
        await sub.close()
        if not sub.durable:
            sub.cursor.close()  # a reader's cursor unregisters itself from the managed ledger

    async def unsubscribe(self, sub: PersistentSubscription, consumer: Consumer | None) -> None:
        others = [c for c in sub.consumers if c is not consumer]
        if others:
            raise MetadataProblem("Unconnected or shared consumer attempting to unsubscribe")
        if consumer is not None:
            sub.remove_consumer(consumer)
        await self._drop_subscription(sub)
        if sub.durable and sub.name in self.ml.cursors:
            await self.ml.delete_cursor(sub.name)
        log.info("unsubscribed", topic=str(self.name), subscription=sub.name)

    async def create_subscription(self, name: str, start: MessageId) -> None:
        """A durable subscription at ``start`` without consumers (admin)."""
        self._check_open()
        if name in self.subscriptions:
            return
        initial = InitialPosition.EARLIEST if start == EARLIEST else InitialPosition.LATEST
        cursor = await self.ml.open_cursor(name, initial)
        sub = self._new_subscription(name, cursor, pb.CommandSubscribe.Exclusive)
        self.subscriptions.setdefault(name, sub)
        if start not in (EARLIEST, LATEST):
            await self.subscriptions[name].reset_cursor(self.start_position(start))

    def subscription(self, name: str) -> PersistentSubscription:
        sub = self.subscriptions.get(name)
        if sub is None:
            raise SubscriptionNotFound(name)
        return sub

    # ------------------------------------------------------------------ positions
    async def position_for_time(self, timestamp_ms: int) -> Position:
        """The first entry published at or after ``timestamp_ms`` (the end if none)."""
        layout = self.ml.layout
        pos = layout.first_at_or_after(layout.first_position())
        while pos is not None:
            entries = await self.ml.read_entries(pos, _SCAN_BATCH)
            if not entries:
                break
            for entry in entries:
                if entry_info(entry.data).publish_time >= timestamp_ms:
                    return entry.position
            pos = layout.next_position(entries[-1].position)
        return layout.end_position()

    async def last_message_id(self) -> MessageId:
        """The last entry's id; batch_index is the last index of a batched entry."""
        last = self.ml.last_confirmed_position
        if last.entry_id < 0 or not self.ml.layout.contains(last):
            return MessageId(last.ledger_id, last.entry_id)
        entries = await self.ml.read_positions([last])
        if entries:
            info = entry_info(entries[0].data)
            if info.batched:
                return MessageId(last.ledger_id, last.entry_id, batch_index=info.messages - 1)
        return MessageId(last.ledger_id, last.entry_id)

    # ------------------------------------------------------------------ terminate
    async def terminate(self) -> MessageId:
        """End the topic's log (Pulsar's terminate): the id of its last message."""
        self._check_open()
        self._terminating = True  # no publish from here on; in-flight ones finish
        try:
            producers = list(self.producers.values())
            if producers:
                await asyncio.gather(*(p.flush(_TERMINATE_DRAIN_S) for p in producers))
            await self.ml.terminate()
        finally:
            self._terminating = False  # from now on the managed ledger says it
        for producer in list(self.producers.values()):
            producer.close_by_broker()  # the reconnect gets TopicTerminatedError
            self.remove_producer(producer)
        for sub in list(self.subscriptions.values()):
            sub.topic_terminated()
        log.info("topic_terminated", topic=str(self.name))
        return await self.last_message_id()

    # ------------------------------------------------------------------ close
    async def close(self, *, disconnect_clients: bool = True) -> None:
        """Tell producers and consumers to reconnect, stop dispatching, close the ledger."""
        if self._closing:
            return
        self._closing = True  # no publish from here on (unanswered: the client resends it)
        self.access.close()
        producers = list(self.producers.values())
        if disconnect_clients and producers:
            # The receipts of the publishes in flight go out before CLOSE_PRODUCER: a client
            # told to reconnect first resends them, and they are stored twice.
            await asyncio.gather(*(p.flush(_CLOSE_DRAIN_S) for p in producers))
        for producer in list(self.producers.values()):  # less any the client closed meanwhile
            if disconnect_clients:
                producer.close_by_broker()
        self.producers.clear()
        if self.replication is not None:
            await self.replication.close()
        await asyncio.gather(
            *(sub.close(disconnect=disconnect_clients) for sub in self.subscriptions.values())
        )
        await self.deduplication.close()
        await self.compaction.close()
        await self.ml.close()
        log.info("topic_closed", topic=str(self.name))
