"""A consumer over several topics: a list, a partitioned topic, or a regex pattern.

One child :class:`~magnetar.client.consumer.Consumer` per topic (per partition for partitioned
topics), all on the same subscription. Each child keeps its own receiver queue and permits;
:meth:`MultiTopicConsumer.receive` takes from the children in rotation, waking on any child's
arrival. Acknowledgements go to the child that owns the message's topic.

Pattern subscriptions (``topics_pattern``) list the namespace's topics (GET_TOPICS_OF_NAMESPACE),
subscribe to those whose full name matches, and re-check every
``pattern_auto_discovery_period_s`` (default 60 s): new topics get children, vanished ones lose
theirs. Partition names from the broker are folded into their partitioned topic.

With ``enable_retry`` (one topic, or the first of a list) the retry-letter topic joins the
topics and :meth:`MultiTopicConsumer.reconsume_later` publishes to it
(:mod:`magnetar.client.retry_letter`); both topics share one resolved ``DeadLetterPolicy``, so
their dead letters go to the original topic's ``-DLQ``.

Concurrency: one event loop. Owned task: the pattern re-check, stopped by :meth:`close`.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from magnetar.cancellation import cancel_and_wait
from magnetar.client.consumer import Consumer, wait_for_message
from magnetar.client.context import ClientContext
from magnetar.client.dead_letter import DeadLetterProducer
from magnetar.client.errors import ClientClosed, ClientError, InvalidConfiguration
from magnetar.client.message import Message
from magnetar.client.receiver import ConsumerOptions
from magnetar.client.retry_letter import RetryLetterRouter, retry_policy
from magnetar.naming import client_topic_name, full_topic_name, partition_name
from magnetar.protocol.message_id import MessageId
from magnetar.telemetry import get_logger

log = get_logger(__name__)


class MultiTopicConsumer:
    """Many child consumers, one subscription, one receive queue view."""

    def __init__(
        self,
        client: ClientContext,
        subscription: str,
        options: ConsumerOptions,
        *,
        topics: Sequence[str] = (),
        pattern: str | None = None,
        known_partitions: Mapping[str, int] | None = None,
        retry: RetryLetterRouter | None = None,
    ) -> None:
        if not topics and pattern is None:
            raise InvalidConfiguration("a multi-topic consumer needs topics or a pattern")
        self._client = client
        self.subscription = subscription
        self.options = options
        self._topics = [full_topic_name(t) for t in topics]
        # partition counts the caller already looked up (by full name), to skip a second lookup
        self._known_partitions = dict(known_partitions or {})
        # short patterns ("orders-.*") match in public/default, like topic names
        self._pattern = re.compile(full_topic_name(pattern)) if pattern else None
        self._namespace = str(client_topic_name(pattern).namespace) if pattern else None
        self._children: dict[str, Consumer] = {}  # by full (partition) topic name
        self._by_parent: dict[str, list[str]] = {}
        self._rotation: list[Consumer] = []
        self._next = 0
        self._arrived = asyncio.Event()
        self._closed = False
        self._discovery: asyncio.Task[None] | None = None
        self._retry = retry

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        try:
            if self._pattern is not None:
                await self._discover()
                self._discovery = asyncio.get_running_loop().create_task(
                    self._rediscover(), name=f"pattern-{self._pattern.pattern}"
                )
            else:
                for topic in self._topics:
                    await self._add_topic(topic, self._known_partitions.get(topic))
        except BaseException:
            await self.close()
            raise
        self._client.track(self)

    async def _add_topic(self, topic: str, partitions: int | None = None) -> None:
        if partitions is None:
            partitions = await self._client.lookup.partitions(topic)
        names = [partition_name(topic, i) for i in range(partitions)] if partitions else [topic]
        children: list[Consumer] = []
        try:
            for name in names:
                child = Consumer(
                    self._client,
                    name,
                    self.subscription,
                    self.options,
                    on_arrival=self._arrived.set,
                    dead_letter_topic_base=topic,
                )
                await child.start()
                self._client.untrack(child)  # closed through this consumer
                children.append(child)
        except BaseException:
            for child in children:
                await child.close()
            raise
        for child in children:
            self._children[child.topic] = child
        self._by_parent[topic] = [c.topic for c in children]
        self._rotation = list(self._children.values())
        log.info("multi_topic_added", topic=topic, partitions=partitions,
                 subscription=self.subscription)  # fmt: skip

    async def _remove_topic(self, topic: str) -> None:
        for name in self._by_parent.pop(topic, []):
            child = self._children.pop(name, None)
            if child is not None:
                await child.close()
        self._rotation = list(self._children.values())
        log.info("multi_topic_removed", topic=topic, subscription=self.subscription)

    async def _discover(self) -> None:
        assert self._pattern is not None
        assert self._namespace is not None
        listed = await self._client.lookup.topics_of_namespace(self._namespace, "persistent")
        parents = {str(client_topic_name(t).partitioned_topic_name) for t in listed}
        wanted = {t for t in parents if self._pattern.fullmatch(t)}
        for topic in sorted(wanted - self._by_parent.keys()):
            await self._add_topic(topic)
        for topic in sorted(self._by_parent.keys() - wanted):
            await self._remove_topic(topic)

    async def _rediscover(self) -> None:
        while True:
            await asyncio.sleep(self.options.pattern_auto_discovery_period_s)
            try:
                await self._discover()
            except ClientError as exc:
                log.info("pattern_discovery_failed", error=repr(exc))

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._arrived.set()
        await cancel_and_wait(self._discovery)
        children, self._children = list(self._children.values()), {}
        self._rotation = []
        await asyncio.gather(*(c.close() for c in children))
        if self._retry is not None:
            await self._retry.close()
        self._client.untrack(self)

    async def unsubscribe(self) -> None:
        for child in list(self._children.values()):
            await child.unsubscribe()
        await self.close()

    @property
    def topics(self) -> list[str]:
        """The child topics (partitions for partitioned topics), sorted."""
        return sorted(self._children)

    @property
    def is_connected(self) -> bool:
        return bool(self._children) and all(c.is_connected for c in self._children.values())

    # ------------------------------------------------------------------ receiving
    def poll(self) -> Message | None:
        rotation = self._rotation
        for step in range(len(rotation)):
            child = rotation[(self._next + step) % len(rotation)]
            message = child.poll()
            if message is not None:
                self._next = (self._next + step + 1) % len(rotation)
                return message
        return None

    async def receive(self, timeout_s: float | None = None) -> Message:
        return await wait_for_message(self.poll, self._arrived, self._check_open, timeout_s)

    def poll_many(self, max_messages: int | None = None) -> list[Message]:
        """Up to ``max_messages`` (None = all) queued messages, children in turn; maybe none."""
        rotation = self._rotation
        taken: list[Message] = []
        for step in range(len(rotation)):
            left = None if max_messages is None else max_messages - len(taken)
            if left is not None and left <= 0:
                break
            child = rotation[(self._next + step) % len(rotation)]
            taken += child.poll_many(left)
        if rotation:
            self._next = (self._next + 1) % len(rotation)
        return taken

    async def batch_receive(
        self, max_messages: int | None = None, timeout_s: float | None = None
    ) -> list[Message]:
        """:meth:`Consumer.batch_receive` over every child: at least one message."""
        taken = self.poll_many(max_messages)
        if taken:
            return taken
        first = await self.receive(timeout_s)
        return [first, *self.poll_many(None if max_messages is None else max_messages - 1)]

    def _check_open(self) -> None:
        if self._closed:
            raise ClientClosed("multi-topic consumer is closed")

    def __aiter__(self) -> MultiTopicConsumer:
        return self

    async def __anext__(self) -> Message:
        try:
            return await self.receive()
        except ClientClosed:
            raise StopAsyncIteration from None

    # ------------------------------------------------------------------ acknowledging
    def _child(self, target: Message | MessageId, topic: str | None) -> Consumer:
        if isinstance(target, Message):
            child = self._children.get(target.topic)  # a child's own (full) name: no parse
            if child is not None:
                return child
            topic = target.topic
        if topic is None:
            raise InvalidConfiguration("acknowledging a bare MessageId needs its topic")
        child = self._children.get(full_topic_name(topic))
        if child is None:
            raise InvalidConfiguration(f"{topic} is not consumed here")
        return child

    def acknowledge(
        self,
        target: Message | MessageId | Iterable[Message | MessageId],
        *,
        topic: str | None = None,
    ) -> None:
        """One message, or each of several (``topic`` applies to bare MessageIds)."""
        if isinstance(target, (Message, MessageId)):
            self._child(target, topic).acknowledge(target)
            return
        for each in target:
            self._child(each, topic).acknowledge(each)

    def acknowledge_cumulative(
        self, target: Message | MessageId, *, topic: str | None = None
    ) -> None:
        self._child(target, topic).acknowledge_cumulative(target)

    def negative_acknowledge(
        self, target: Message | MessageId, *, topic: str | None = None
    ) -> None:
        self._child(target, topic).negative_acknowledge(target)

    async def reconsume_later(self, message: Message, delay_s: float) -> None:
        """Publish a copy of ``message`` to the retry topic, delivered ``delay_s`` from now
        (past ``max_redeliver_count`` retries: to the dead-letter topic), then acknowledge it.
        Needs ``enable_retry=True``; raises the publish's error (then nothing is acked)."""
        self._check_open()
        if self._retry is None:
            raise InvalidConfiguration("reconsume_later needs a consumer with enable_retry=True")
        child = self._child(message, None)
        await self._retry.publish(message, delay_s)
        child.acknowledge(message)

    async def seek(self, target: MessageId | int) -> None:
        """Seek every child: by publish time (ms), or by a message id (its partition's child)."""
        if isinstance(target, MessageId):
            owners = [c for c in self._children.values() if c.partition == target.partition]
            if len(owners) != 1:
                raise InvalidConfiguration("seek by message id needs one matching partition")
            await owners[0].seek(target)
            return
        await asyncio.gather(*(c.seek(target) for c in self._children.values()))


async def subscribe(
    client: ClientContext,
    topic: str | Sequence[str] | None,
    subscription: str,
    options: ConsumerOptions,
    *,
    topics_pattern: str | None = None,
) -> Consumer | MultiTopicConsumer:
    """The right handle: a Consumer for one non-partitioned topic, else a MultiTopicConsumer."""
    if topics_pattern is not None:
        if topic:
            raise InvalidConfiguration("give either topic(s) or topics_pattern, not both")
        multi = MultiTopicConsumer(client, subscription, options, pattern=topics_pattern)
        await multi.start()
        return multi
    if topic is None or not topic:
        raise InvalidConfiguration("subscribe needs a topic, a list of topics or a pattern")
    if options.enable_retry:
        return await _subscribe_with_retry(client, topic, subscription, options)
    known: dict[str, int] = {}
    if isinstance(topic, str):
        partitions = await client.lookup.partitions(topic)
        if partitions == 0:
            consumer = Consumer(client, topic, subscription, options)
            await consumer.start()
            return consumer
        known = {full_topic_name(topic): partitions}
        topic = [topic]
    multi = MultiTopicConsumer(
        client, subscription, options, topics=list(topic), known_partitions=known
    )
    await multi.start()
    return multi


async def _subscribe_with_retry(
    client: ClientContext, topic: str | Sequence[str], subscription: str, options: ConsumerOptions
) -> MultiTopicConsumer:
    """The topics and the retry topic of the first one, one resolved policy for all."""
    topics = [topic] if isinstance(topic, str) else list(topic)
    policy = retry_policy(options.dead_letter_policy, topics[0], subscription)
    assert policy.retry_letter_topic is not None
    if full_topic_name(policy.retry_letter_topic) not in {full_topic_name(t) for t in topics}:
        topics.append(policy.retry_letter_topic)
    options = replace(options, dead_letter_policy=policy)

    async def producer(name: str) -> DeadLetterProducer:
        return await client.create_producer(name, batching_enabled=False)

    multi = MultiTopicConsumer(
        client, subscription, options, topics=topics, retry=RetryLetterRouter(policy, producer)
    )
    await multi.start()
    return multi
