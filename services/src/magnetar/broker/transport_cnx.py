"""TransportCnx: what a connection's command handlers see of the connection.

:class:`~magnetar.broker.producer_requests.ProducerRequests` and
:class:`~magnetar.broker.consumer_requests.ConsumerRequests` handle the producer and the consumer
commands of one :class:`~magnetar.broker.connection.ServerCnx`. They reach the connection only
through this protocol: the :class:`~magnetar.broker.topic.ClientCnx` slice that their producers
and consumers write frames through, plus running a request as a task of the connection
(answered by request id) and closing the connection on a protocol violation. They never touch
the connection's state, and the connection never touches their registries.

Concurrency: everything on the broker's loop; ``spawn`` and ``request`` wait while the
connection already runs its maximum number of tasks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Protocol

from magnetar.broker.topic import ClientCnx
from magnetar.naming import NamespaceName, TopicName
from magnetar.wire import pulsar_api_pb2 as pb

RequestWork = Callable[[], Awaitable[pb.BaseCommand | None]]
ErrorReply = Callable[[int, pb.ServerError.ValueType, str], pb.BaseCommand]


class TransportCnx(ClientCnx, Protocol):
    """The connection a command handler serves."""

    def close(self) -> None:
        """Drop the client (frames already written still go out)."""

    async def spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run ``work`` as a task of the connection, cancelled when the connection closes."""
        ...

    async def authorize(
        self, topic: TopicName, action: str, subscription: str | None = None
    ) -> None:
        """Return if the connection's role may ``action`` (produce, consume, lookup) on
        ``topic``; raise NotAuthorized otherwise (always returns with authorization off)."""
        ...

    async def authorize_namespace(self, namespace: NamespaceName, action: str) -> None:
        """As :meth:`authorize`, for an action on a whole namespace (listing its topics)."""
        ...

    async def request(self, request_id: int, work: RequestWork, on_error: ErrorReply = ...) -> None:
        """Spawn ``work``; write its reply, or ``on_error(...)`` if it raises a MagnetarError
        (``commands.error`` by default)."""
