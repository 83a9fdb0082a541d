"""A reader: a non-durable, exclusive subscription that starts at a chosen message.

The subscription name is generated (``reader-<random>``) unless given; nothing is
acknowledged, so the broker keeps no position for it. ``start_message_id`` is EARLIEST, LATEST
or a MessageId; with ``start_message_id_inclusive`` the start message itself is read (for LATEST:
the topic's last message, found with GET_LAST_MESSAGE_ID and a seek). After a reconnect the
reader resumes after the last message it returned.

:meth:`Reader.has_message_available` asks the broker for the last message id and compares it
with the last message read (or, before any, with the start), like the C++ client.

Concurrency: one event loop; a thin wrapper over one :class:`~magnetar.client.consumer.Consumer`.
"""

from __future__ import annotations

import uuid

from magnetar.client.consumer import Consumer
from magnetar.client.context import ClientContext
from magnetar.client.message import Message
from magnetar.client.receiver import ConsumerOptions, SubscriptionType
from magnetar.protocol.message_id import EARLIEST, LATEST, MessageId


def _order(mid: MessageId) -> tuple[int, int, int]:
    return (mid.ledger_id, mid.entry_id, mid.batch_index)


class Reader:
    """Reads a topic from a chosen message on; never acknowledges. Create with ``create_reader``."""

    def __init__(
        self,
        client: ClientContext,
        topic: str,
        start_message_id: MessageId,
        *,
        start_message_id_inclusive: bool = False,
        subscription_name: str | None = None,
        reader_name: str | None = None,
        receiver_queue_size: int = 1000,
        read_compacted: bool = False,
    ) -> None:
        self._inclusive = start_message_id_inclusive
        self._start = start_message_id
        options = ConsumerOptions(
            subscription_type=SubscriptionType.EXCLUSIVE,
            durable=False,
            consumer_name=reader_name,
            receiver_queue_size=receiver_queue_size,
            read_compacted=read_compacted,
            start_message_id=start_message_id,
            start_message_id_inclusive=start_message_id_inclusive,
            ack_grouping_time_s=0,
        )
        name = subscription_name or f"reader-{uuid.uuid4().hex[:10]}"
        self._consumer = Consumer(client, topic, name, options)
        self.topic = self._consumer.topic
        self.subscription = name

    async def start(self) -> None:
        await self._consumer.start()
        if self._start == LATEST and self._inclusive:
            last = await self._consumer.get_last_message_id()
            if last.entry_id >= 0:
                await self._consumer.seek(last)

    async def read_next(self, timeout_s: float | None = None) -> Message:
        """The next message; raises ReceiveTimeout after ``timeout_s``."""
        return await self._consumer.receive(timeout_s)

    def __aiter__(self) -> Reader:
        return self

    async def __anext__(self) -> Message:
        return await self._consumer.__anext__()

    async def has_message_available(self) -> bool:
        """Whether a ``read_next`` would find a message now (asks the broker)."""
        if self._consumer.queued:
            return True
        last, mark = await self._consumer.last_and_mark_delete()
        if last.entry_id < 0:
            return False
        seen = self._consumer.last_dequeued
        if seen is not None:
            return _order(last) > _order(seen)
        start = self._consumer.start_message_id
        if start is None or start == LATEST:
            # nothing read yet from "latest" (or after a seek by time): anything past the
            # broker's position for this reader
            return mark is None or last.entry > mark.entry
        if start == EARLIEST:
            return True
        if self._consumer.start_inclusive:
            return _order(last) >= _order(start)
        return _order(last) > _order(start)

    async def seek(self, target: MessageId | int) -> None:
        """Move to a message id (read next, inclusive) or a publish time in ms."""
        await self._consumer.seek(target)

    @property
    def is_connected(self) -> bool:
        return self._consumer.is_connected

    async def close(self) -> None:
        await self._consumer.close()
