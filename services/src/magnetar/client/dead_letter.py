"""The dead-letter policy: messages redelivered too often go to a dead-letter topic.

Like the Pulsar clients: a message that arrives with ``redelivery_count >=
max_redeliver_count`` is still handed to the application once more; if it is then negatively
acknowledged (or its ack timeout expires) it is not redelivered again but published, with its
key and properties plus ``REAL_TOPIC`` and ``ORIGIN_MESSAGE_ID``, to the dead-letter topic
(default ``<topic>-<subscription>-DLQ``, the partitioned topic's name for partitions) and then
acknowledged on the original subscription. So the application sees it
``max_redeliver_count + 1`` times.

:class:`DeadLetterRouter` keeps the candidates (delivered, unacknowledged messages at the
limit), keyed by entry; it is bounded by what the consumer has delivered and not acknowledged.
Its producer is created on first use and closed with the router.

Concurrency: one consumer's event loop; :meth:`DeadLetterRouter.route` awaits the producer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from magnetar.client.errors import InvalidConfiguration
from magnetar.client.message import Message, entry_id_of
from magnetar.naming import client_topic_name
from magnetar.protocol.message_id import MessageId
from magnetar.telemetry import get_logger

log = get_logger(__name__)

PROPERTY_REAL_TOPIC = "REAL_TOPIC"
PROPERTY_ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"


@dataclass(frozen=True)
class DeadLetterPolicy:
    """``max_redeliver_count`` deliveries after the first, then the dead-letter topic."""

    max_redeliver_count: int
    dead_letter_topic: str | None = None
    retry_letter_topic: str | None = None  # with enable_retry (see retry_letter.py)

    def __post_init__(self) -> None:
        if self.max_redeliver_count < 1:
            raise InvalidConfiguration("max_redeliver_count must be at least 1")

    def topic_for(self, topic: str, subscription: str) -> str:
        if self.dead_letter_topic:
            return self.dead_letter_topic
        return f"{client_topic_name(topic).partitioned_topic_name}-{subscription}-DLQ"


class DeadLetterProducer(Protocol):
    async def send(
        self,
        data: bytes,
        *,
        key: str | None = ...,
        properties: Mapping[str, str] | None = ...,
        deliver_after_ms: int | None = ...,
    ) -> Any: ...

    async def close(self) -> None: ...


def origin_id(mid: MessageId) -> str:
    """The C++ client's ``ledger:entry:partition:batch`` form."""
    return f"{mid.ledger_id}:{mid.entry_id}:{mid.partition}:{mid.batch_index}"


class DeadLetterRouter:
    def __init__(
        self,
        policy: DeadLetterPolicy,
        topic: str,
        create_producer: Callable[[str], Awaitable[DeadLetterProducer]],
    ) -> None:
        self.policy = policy
        self.topic = topic
        self._create_producer = create_producer
        self._producer: DeadLetterProducer | None = None
        self._candidates: dict[MessageId, dict[MessageId, Message]] = {}

    def observe(self, message: Message) -> None:
        """A message handed to the application; remember it if it reached the limit."""
        if message.redelivery_count >= self.policy.max_redeliver_count:
            entry = entry_id_of(message.message_id)
            self._candidates.setdefault(entry, {})[message.message_id] = message

    def forget(self, mid: MessageId) -> None:
        """Acknowledged: no longer a candidate (a whole-entry id forgets the entry)."""
        entry = entry_id_of(mid)
        held = self._candidates.get(entry)
        if held is None:
            return
        if mid.batch_index < 0:
            del self._candidates[entry]
        else:
            held.pop(mid, None)
            if not held:
                del self._candidates[entry]

    def forget_up_to(self, mid: MessageId) -> None:
        for entry in [e for e in self._candidates if e.entry <= mid.entry]:
            del self._candidates[entry]

    async def route(self, entries: list[MessageId]) -> tuple[list[MessageId], list[Message]]:
        """Publish candidates among ``entries`` to the dead-letter topic.

        Returns the entries still to redeliver and the messages now dead-lettered (the caller
        acknowledges those). A failed publish keeps the entry for normal redelivery.
        """
        keep: list[MessageId] = []
        dead: list[Message] = []
        for entry in entries:
            held = self._candidates.get(entry_id_of(entry))
            if not held:
                keep.append(entry)
                continue
            try:
                producer = await self._producer_for()
                for message in held.values():
                    props = dict(message.properties)
                    props[PROPERTY_REAL_TOPIC] = message.topic
                    props[PROPERTY_ORIGIN_MESSAGE_ID] = origin_id(message.message_id)
                    await producer.send(message.data, key=message.key, properties=props)
            except Exception as exc:
                log.warning("dead_letter_publish_failed", topic=self.topic, error=repr(exc))
                keep.append(entry)
                continue
            del self._candidates[entry_id_of(entry)]
            dead += held.values()
            log.info("dead_lettered", topic=self.topic, entry=origin_id(entry), n=len(held))
        return keep, dead

    async def _producer_for(self) -> DeadLetterProducer:
        if self._producer is None:
            self._producer = await self._create_producer(self.topic)
        return self._producer

    async def close(self) -> None:
        producer, self._producer = self._producer, None
        self._candidates.clear()
        if producer is not None:
            await producer.close()
