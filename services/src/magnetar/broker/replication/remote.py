"""What a replicator needs from a remote cluster, as protocols the broker does not implement.

The broker never imports the client (the layers keep them apart); the composition above both
(``magnetar.geo``, wired by the command line) implements :class:`RemoteClusters` on
``magnetar.client`` and hands it to the broker. Without one, the broker replicates nothing and
says so once per topic.

:meth:`RemoteClusters.create_producer` creates the topic on the remote as needed — for a
partition of a partitioned topic, the partitioned metadata with the local partition count
first — then a producer named ``producer_name`` on it. A producer keeps what it was given
across reconnections and resends it in order; its futures fail only when it is closed or
gives up. :meth:`RemoteClusters.register_schema` gives a schema the remote's version of it, so
that a replicated message names the remote's copy of its schema. Called from the replicators'
tasks on the broker's loop.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from magnetar.naming import TopicName
from magnetar.policies import ClusterData
from magnetar.protocol.message_id import MessageId
from magnetar.schema import SchemaData
from magnetar.wire import pulsar_api_pb2 as pb


class RemoteProducer(Protocol):
    @property
    def is_connected(self) -> bool: ...

    @property
    def connected_address(self) -> str | None:
        """The remote broker this producer is attached to, None while detached."""
        ...

    async def send_entry(
        self, metadata: pb.MessageMetadata, payload: bytes
    ) -> asyncio.Future[MessageId]: ...

    async def close(self, *, drain: bool = True) -> None:
        """``drain=False``: fail what is pending at once instead of waiting for it."""
        ...


class RemoteClusters(Protocol):
    async def create_producer(
        self,
        cluster: str,
        data: ClusterData,
        topic: TopicName,
        *,
        producer_name: str,
        partitions: int,
        max_pending: int,
    ) -> RemoteProducer:
        """A producer on ``topic`` in ``cluster`` (``partitions``: the partitioned topic's
        count when ``topic`` is one of its partitions, else 0)."""
        ...

    async def register_schema(
        self, cluster: str, data: ClusterData, topic: TopicName, schema: SchemaData
    ) -> int:
        """``schema`` registered for ``topic`` in ``cluster`` (an equal one keeps its
        version): the remote's version of it."""
        ...

    async def close(self) -> None: ...
