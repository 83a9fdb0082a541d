"""What a producer, consumer or reader needs from the client that created it.

:class:`ClientContext` is the narrow face of :class:`~magnetar.client.client.Client` that the
handles see: the connection pool and lookups, the operation timeout, id allocation, handle
tracking, and a way to open a producer (for dead-letter topics). Handles are typed against this
Protocol, never against ``Client``, so ``client.py`` sits above ``producer.py``,
``partitioned_producer.py``, ``consumer.py``, ``multi_topic.py`` and ``reader.py`` and none of
them imports it back (an import contract in pyproject.toml keeps it so).

Invariants the implementation keeps: ids from ``new_producer_id`` / ``new_consumer_id`` are
unique per client; a tracked handle is closed with the client; ``untrack`` of an unknown handle
is a no-op.

Concurrency: one event loop; the handles call these methods from coroutines or connection
callbacks on that loop.
"""

from __future__ import annotations

from typing import Protocol

from magnetar.client.dead_letter import DeadLetterProducer
from magnetar.client.lookup import LookupService
from magnetar.client.pool import ConnectionPool


class Closable(Protocol):
    """A handle the client closes with itself."""

    async def close(self) -> None: ...


class ClientContext(Protocol):
    """The client's services as its producers, consumers and readers use them."""

    @property
    def pool(self) -> ConnectionPool: ...

    @property
    def lookup(self) -> LookupService: ...

    @property
    def operation_timeout_s(self) -> float: ...

    def new_producer_id(self) -> int: ...

    def new_consumer_id(self) -> int: ...

    def track(self, handle: Closable) -> None:
        """Close ``handle`` with the client."""

    def untrack(self, handle: Closable) -> None: ...

    async def create_producer(
        self, topic: str, *, batching_enabled: bool = ...
    ) -> DeadLetterProducer:
        """A started producer for ``topic`` (the consumer's dead-letter producer)."""
