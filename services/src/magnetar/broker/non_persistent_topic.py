"""A non-persistent topic: messages go straight to the consumers connected now.

Nothing is stored. A published message is handed to each subscription's chosen consumer if that
consumer has a permit, and dropped for that subscription otherwise (Pulsar's behaviour). There
are no acks (the C++ client sends none for non-persistent topics), so nothing is tracked as
pending. Message ids are (0, n) with n counting this topic's messages since it was loaded.

Concurrency: on the broker's loop; publish is synchronous apart from its signature.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

from magnetar.broker.consumer import Consumer
from magnetar.broker.entry import entry_info
from magnetar.broker.errors import ConsumerBusy, ProducerBusy, TopicClosed
from magnetar.broker.producer import Producer
from magnetar.broker.producer_access import ProducerAccess, ProducerRequest
from magnetar.broker.stats import OutTotals
from magnetar.ids import EntryId, LedgerId
from magnetar.managed_ledger import Position
from magnetar.naming import TopicName
from magnetar.protocol.message_id import MessageId
from magnetar.telemetry import get_logger
from magnetar.wire import pulsar_api_pb2 as pb

log = get_logger(__name__)
Sub = pb.CommandSubscribe


class NonPersistentSubscription:
    def __init__(self, name: str, sub_type: pb.CommandSubscribe.SubType.ValueType) -> None:
        self.name = name
        self.sub_type = sub_type
        self.consumers: list[Consumer] = []
        self._next = 0
        self.dropped = 0
        self.out_of_removed = OutTotals()  # what departed consumers dispatched

    def add_consumer(self, consumer: Consumer) -> None:
        if self.consumers:
            if consumer.sub_type != self.sub_type:
                raise ConsumerBusy(self.name, "Subscription is of different type")
            if self.sub_type == Sub.Exclusive:
                raise ConsumerBusy(self.name, "Exclusive consumer is already connected")
        else:
            self.sub_type = consumer.sub_type
        self.consumers.append(consumer)

    def remove_consumer(self, consumer: Consumer) -> None:
        if consumer in self.consumers:
            self.consumers.remove(consumer)
            self.out_of_removed.add(consumer.messages_out, consumer.bytes_out)

    def flow(self, consumer: Consumer, permits: int) -> None:
        consumer.permits += permits

    def _select(self, key: bytes) -> Consumer | None:
        live = [c for c in self.consumers if c.cnx.is_open and not c.closed]
        if not live:
            return None
        if self.sub_type in (Sub.Exclusive, Sub.Failover):
            chosen = min(live, key=lambda c: (c.priority, c.name))
        elif self.sub_type == Sub.Key_Shared:
            ordered = sorted(live, key=lambda c: c.name)
            chosen = ordered[zlib.crc32(key) % len(ordered)]
        else:
            for step in range(len(live)):
                candidate = live[(self._next + step) % len(live)]
                if candidate.permits > 0:
                    self._next = (self._next + step + 1) % len(live)
                    return candidate
            return None
        return chosen if chosen.permits > 0 else None

    def deliver(self, pos: Position, stored: bytes, key: bytes, messages: int) -> None:
        consumer = self._select(key)
        if consumer is None:
            self.dropped += messages
            return
        consumer.deliver(pos, stored, messages)


class NonPersistentTopic:
    def __init__(self, name: TopicName) -> None:
        self.name = name
        self.producers: dict[str, Producer] = {}
        self.subscriptions: dict[str, NonPersistentSubscription] = {}
        self._sequence = -1
        self._closing = False
        self.access = ProducerAccess(str(name), None, _epoch_in_memory)
        self.messages_in = 0
        self.bytes_in = 0

    @property
    def is_open(self) -> bool:
        return not self._closing

    async def add_producer(
        self,
        producer: Producer,
        request: ProducerRequest | None = None,
        on_queued: Callable[[], None] = lambda: None,
    ) -> int | None:
        """Admit ``producer`` under its access mode; the topic epoch (kept in memory only)."""
        if self._closing:
            raise TopicClosed(str(self.name))
        if producer.name in self.producers:
            raise ProducerBusy(str(self.name), producer.name)
        epoch = await self.access.admit(
            request or ProducerRequest(producer.name),
            len(self.producers),
            self._fence_producers,
            on_queued,
        )
        if self._closing or producer.name in self.producers:
            self.access.released(producer.name, len(self.producers))
            raise (
                TopicClosed(str(self.name))
                if self._closing
                else ProducerBusy(str(self.name), producer.name)
            )
        self.producers[producer.name] = producer
        return epoch

    def remove_producer(self, producer: Producer) -> None:
        if self.producers.get(producer.name) is producer:
            del self.producers[producer.name]
            self.access.released(producer.name, len(self.producers))

    def _fence_producers(self) -> None:
        for producer in list(self.producers.values()):
            producer.close_by_broker()
        self.producers.clear()

    async def publish(self, stored: bytes, num_messages: int) -> MessageId:
        if self._closing:
            raise TopicClosed(str(self.name))
        self._sequence += 1
        pos = Position(LedgerId(0), EntryId(self._sequence))
        info = entry_info(stored)
        for sub in list(self.subscriptions.values()):
            sub.deliver(pos, stored, info.key, info.messages)
        self.messages_in += num_messages
        self.bytes_in += len(stored)
        return MessageId(0, self._sequence)

    def subscribe(self, consumer: Consumer) -> NonPersistentSubscription:
        if self._closing:
            raise TopicClosed(str(self.name))
        sub = self.subscriptions.get(consumer.subscription)
        if sub is None:
            sub = NonPersistentSubscription(consumer.subscription, consumer.sub_type)
            self.subscriptions[consumer.subscription] = sub
        sub.add_consumer(consumer)
        return sub

    def consumer_left(self, sub: NonPersistentSubscription, consumer: Consumer) -> None:
        sub.remove_consumer(consumer)
        if not sub.consumers and self.subscriptions.get(sub.name) is sub:
            del self.subscriptions[sub.name]

    async def close(self, *, disconnect_clients: bool = True) -> None:
        if self._closing:
            return
        self._closing = True
        self.access.close()
        if disconnect_clients:
            for producer in list(self.producers.values()):
                producer.close_by_broker()
            for sub in self.subscriptions.values():
                for consumer in list(sub.consumers):
                    consumer.close_by_broker()
        self.producers.clear()
        self.subscriptions.clear()
        log.info("topic_closed", topic=str(self.name))


async def _epoch_in_memory(_epoch: int) -> None:
    """A non-persistent topic's epoch lives as long as the topic is loaded."""
