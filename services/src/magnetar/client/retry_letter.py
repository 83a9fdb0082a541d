"""The retry-letter topic: ``reconsume_later`` puts a message back after a delay, as Pulsar does.

With ``enable_retry=True`` a subscription also consumes its retry topic (default
``<topic>-<subscription>-RETRY``, the partitioned topic's name for partitions, or the
``DeadLetterPolicy``'s ``retry_letter_topic``). ``consumer.reconsume_later(msg, delay_s)``
publishes a copy of ``msg`` (payload, key, properties) to the retry topic with delayed delivery
``delay_s`` after now, and then acknowledges ``msg``. The copy carries Pulsar's properties:

* ``RECONSUMETIMES`` — 1 on the first retry, one more on each retry of a retried copy;
* ``DELAY_TIME`` — the delay asked for, in ms;
* ``REAL_TOPIC`` / ``ORIGIN_MESSAGE_ID`` — where the message was first consumed and its id
  there (``ledger:entry:partition:batch``), set on the first retry and kept after.

Once ``RECONSUMETIMES`` would exceed the policy's ``max_redeliver_count`` the copy goes to the
dead-letter topic instead (default ``<topic>-<subscription>-DLQ``), without a delay. The delay
needs a Shared or Key_Shared subscription (the broker ignores it for Exclusive and Failover,
as Pulsar's does) and a namespace whose ``delayedDelivery`` policy is active.

Publish first, acknowledge after: a failure in between delivers the message twice (once more
from the original topic), never zero times — at-least-once, as everywhere else.

Concurrency: one consumer's event loop; the producers are created on first use and closed
with the router (:meth:`RetryLetterRouter.close`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from magnetar.client.dead_letter import (
    PROPERTY_ORIGIN_MESSAGE_ID,
    PROPERTY_REAL_TOPIC,
    DeadLetterPolicy,
    DeadLetterProducer,
    origin_id,
)
from magnetar.client.errors import InvalidConfiguration
from magnetar.client.message import Message
from magnetar.naming import client_topic_name
from magnetar.telemetry import get_logger

log = get_logger(__name__)

PROPERTY_RECONSUME_TIMES = "RECONSUMETIMES"
PROPERTY_DELAY_TIME = "DELAY_TIME"
DEFAULT_MAX_REDELIVER_COUNT = 16  # Pulsar's, when retry is enabled without a policy
RETRY_SUFFIX = "-RETRY"


def retry_policy(
    policy: DeadLetterPolicy | None, topic: str, subscription: str
) -> DeadLetterPolicy:
    """``policy`` with both topics named (Pulsar's defaults for those not given): the policy a
    retry-enabled subscription on ``topic`` uses for its own topic and its retry topic."""
    base = f"{client_topic_name(topic).partitioned_topic_name}-{subscription}"
    if policy is None:
        policy = DeadLetterPolicy(DEFAULT_MAX_REDELIVER_COUNT)
    return DeadLetterPolicy(
        policy.max_redeliver_count,
        policy.dead_letter_topic or f"{base}-DLQ",
        policy.retry_letter_topic or f"{base}{RETRY_SUFFIX}",
    )


def retry_properties(message: Message, delay_ms: int) -> dict[str, str]:
    """The properties of ``message``'s copy on the retry (or dead-letter) topic."""
    props = dict(message.properties)
    previous = props.get(PROPERTY_RECONSUME_TIMES)
    times = 1
    if previous is not None:
        try:
            times = int(previous) + 1
        except ValueError:
            times = 1  # not ours: start over rather than fail the retry
    props[PROPERTY_RECONSUME_TIMES] = str(times)
    props[PROPERTY_DELAY_TIME] = str(delay_ms)
    props.setdefault(PROPERTY_REAL_TOPIC, message.topic)
    props.setdefault(PROPERTY_ORIGIN_MESSAGE_ID, origin_id(message.message_id))
    return props


class RetryLetterRouter:
    """Publishes retried messages to the retry topic, or past the limit to the dead-letter one."""

    def __init__(
        self,
        policy: DeadLetterPolicy,
        create_producer: Callable[[str], Awaitable[DeadLetterProducer]],
    ) -> None:
        if not policy.retry_letter_topic or not policy.dead_letter_topic:
            raise InvalidConfiguration("a retry policy names its retry and dead-letter topics")
        self.policy = policy
        self.retry_topic = policy.retry_letter_topic
        self.dead_letter_topic = policy.dead_letter_topic
        self._create_producer = create_producer
        self._producers: dict[str, DeadLetterProducer] = {}

    async def publish(self, message: Message, delay_s: float) -> str:
        """Publish ``message``'s copy; the topic it went to. The caller acknowledges
        ``message`` afterwards. Raises what the producer raises (nothing is acknowledged)."""
        if delay_s < 0:
            raise InvalidConfiguration(f"the retry delay cannot be negative, got {delay_s}")
        delay_ms = round(delay_s * 1000)
        props = retry_properties(message, delay_ms)
        if int(props[PROPERTY_RECONSUME_TIMES]) > self.policy.max_redeliver_count:
            target = self.dead_letter_topic
            producer = await self._producer_for(target)
            await producer.send(message.data, key=message.key, properties=props)
            log.info("retry_dead_lettered", topic=message.topic, dead_letter_topic=target)
        else:
            target = self.retry_topic
            producer = await self._producer_for(target)
            await producer.send(
                message.data, key=message.key, properties=props, deliver_after_ms=delay_ms
            )
        return target

    async def _producer_for(self, topic: str) -> DeadLetterProducer:
        producer = self._producers.get(topic)
        if producer is None:
            producer = self._producers[topic] = await self._create_producer(topic)
        return producer

    async def close(self) -> None:
        producers, self._producers = list(self._producers.values()), {}
        for producer in producers:
            await producer.close()
