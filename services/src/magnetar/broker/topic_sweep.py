"""A periodic pass over the broker's loaded persistent topics, with their namespace policies.

Message expiry (TTL, retention) and backlog quotas both sweep the loaded topics on a timer;
:class:`TopicSweep` is that loop once. A subclass names itself, says how often
(:attr:`interval_s`) and whether at all (:attr:`enabled`), and implements
:meth:`check_topic`. Each pass reads each namespace's policies once. A failing topic is
logged and the pass goes on to the next; the next pass retries it. :func:`sweep_once` is one
such pass on its own (the deduplication sync runs it when namespace policies change).

Concurrency: one task per sweep, on the broker's loop, started by :meth:`start` and stopped by
:meth:`close` (which waits for it).
"""

from __future__ import annotations

import abc
import asyncio
from collections.abc import Awaitable, Callable, Iterable

from magnetar.broker.persistent_topic import PersistentTopic
from magnetar.broker.policy_defaults import BrokerPolicyDefaults
from magnetar.cancellation import cancel_and_wait
from magnetar.errors import MagnetarError
from magnetar.naming import NamespaceName
from magnetar.policies import Policies
from magnetar.telemetry import get_logger

log = get_logger(__name__)


class TopicSweep(abc.ABC):
    """Runs :meth:`check_topic` over every loaded, open persistent topic every interval."""

    name = "topic-sweep"

    def __init__(
        self,
        topics: Callable[[], Iterable[object]],
        policies: Callable[[NamespaceName], Awaitable[Policies]],
    ) -> None:
        self._topics = topics
        self._policies = policies
        self._task: asyncio.Task[None] | None = None

    @property
    @abc.abstractmethod
    def interval_s(self) -> float: ...

    @property
    def enabled(self) -> bool:
        return True

    @abc.abstractmethod
    async def check_topic(self, topic: PersistentTopic, policies: Policies) -> None: ...

    def start(self) -> None:
        """Start the periodic passes (idempotent; a no-op when not enabled)."""
        if self.enabled and (self._task is None or self._task.done()):
            self._task = asyncio.create_task(self._run(), name=self.name)

    async def close(self) -> None:
        await cancel_and_wait(self._task)
        self._task = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            await self.check_once()

    async def check_once(self) -> None:
        """One pass over every loaded, open persistent topic."""
        await sweep_once(self.name, self._topics(), self._policies, self.check_topic)


class DefaultsSweep(TopicSweep):
    """A sweep that also needs the broker's policy defaults (the TTL, retention and compaction
    threshold a namespace without its own policy gets)."""

    def __init__(
        self,
        topics: Callable[[], Iterable[object]],
        policies: Callable[[NamespaceName], Awaitable[Policies]],
        defaults: BrokerPolicyDefaults,
    ) -> None:
        super().__init__(topics, policies)
        self._defaults = defaults


async def sweep_once(
    name: str,
    topics: Iterable[object],
    policies: Callable[[NamespaceName], Awaitable[Policies]],
    check: Callable[[PersistentTopic, Policies], Awaitable[None]],
) -> None:
    """``check`` each open persistent topic of ``topics`` with its namespace's policies, read
    once per namespace; a failing topic is logged (as sweep ``name``) and skipped."""
    by_namespace: dict[NamespaceName, Policies] = {}
    for topic in list(topics):
        if not isinstance(topic, PersistentTopic) or not topic.is_open:
            continue
        try:
            ns = topic.name.namespace
            if ns not in by_namespace:
                by_namespace[ns] = await policies(ns)
            await check(topic, by_namespace[ns])
        except MagnetarError as exc:
            log.warning("topic_check_failed", sweep=name, topic=str(topic.name),
                        error=repr(exc))  # fmt: skip
