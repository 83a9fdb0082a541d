"""A persistent topic's replicators: one per remote cluster of its namespace's policy.

:meth:`TopicReplicators.update` makes the running replicators match the namespace's
``replication_clusters``: when the list holds the local cluster, every other cluster in it gets
a replicator (its durable cursor ``pulsar.repl.{remote}`` opened, new ones at
``replication_start_at``: Pulsar's ``replicationStartAt``, latest by default); a cluster that
left the list loses its replicator and its cursor (Pulsar's removeReplicator), so the cursor
stops holding back trimming. The topic calls it on load (replicators start with the topic, so
a broker failover moves them with it) and the broker service after every namespace change.
:meth:`TopicReplicators.close` stops them and keeps the cursors (the next owner resumes).

Concurrency: on the broker's loop; updates and the close are serialised by a lock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from magnetar.broker.replication.names import cluster_of, cursor_name, is_replicator
from magnetar.broker.replication.remote import RemoteClusters
from magnetar.broker.replication.replicator import Replicator, ReplicatorConfig
from magnetar.managed_ledger import InitialPosition, ManagedLedger
from magnetar.naming import TopicName
from magnetar.policies import ClusterData
from magnetar.schema import SchemaData
from magnetar.telemetry import get_logger

log = get_logger(__name__)

SchemaAt = Callable[[TopicName, int], Awaitable[SchemaData | None]]


@dataclass(frozen=True)
class ReplicationContext:
    """What every replicator of a broker shares (built once by the broker service)."""

    local: str
    remotes: RemoteClusters | None
    cluster_data: Callable[[str], Awaitable[ClusterData]]
    partitions: Callable[[TopicName], Awaitable[int]]
    config: ReplicatorConfig = field(default_factory=ReplicatorConfig)
    start_at: InitialPosition = InitialPosition.LATEST
    # A topic's schema at a version (None: unknown or deleted), for replicated messages.
    schema_at: SchemaAt | None = None


def remote_clusters(local: str, clusters: frozenset[str]) -> frozenset[str]:
    """The clusters to replicate to: the others, when the policy includes ``local``."""
    return clusters - {local} if local in clusters else frozenset()


class TopicReplicators:
    def __init__(self, topic: TopicName, ml: ManagedLedger, context: ReplicationContext) -> None:
        self.topic = topic
        self.ml = ml
        self.context = context
        self.replicators: dict[str, Replicator] = {}
        self._lock = asyncio.Lock()
        self._closed = False
        self._warned = False

    async def update(self, clusters: frozenset[str]) -> None:
        """Start and stop replicators to match the namespace's ``clusters``."""
        if not self.topic.is_persistent:
            return
        wanted = remote_clusters(self.context.local, clusters)
        async with self._lock:
            if self._closed:
                return
            # A replicator's cluster, or a replicator cursor's (one a previous owner left).
            known = {
                *self.replicators,
                *(cluster_of(n) for n in self.ml.cursors if is_replicator(n)),
            }
            for remote in sorted(known - wanted):
                await self._remove(remote)
            missing = [r for r in sorted(wanted) if r not in self.replicators]
            if missing and self.context.remotes is None:
                if not self._warned:
                    self._warned = True
                    log.warning("replication_unavailable", topic=str(self.topic), remotes=missing)
                return
            for remote in missing:
                await self._add(remote)

    async def _add(self, remote: str) -> None:
        context = self.context
        assert context.remotes is not None
        cursor = await self.ml.open_cursor(cursor_name(remote), context.start_at)
        topic = self.topic
        partitions = (
            await context.partitions(topic.partitioned_topic_name) if topic.is_partition else 0
        )
        replicator = Replicator(
            topic,
            self.ml,
            cursor,
            local=context.local,
            remote=remote,
            remotes=context.remotes,
            cluster_data=context.cluster_data,
            partitions=partitions,
            config=context.config,
            schema_at=context.schema_at,
        )
        self.replicators[remote] = replicator
        replicator.start()
        log.info("replicator_added", topic=str(topic), remote=remote)

    async def _remove(self, remote: str) -> None:
        replicator = self.replicators.pop(remote, None)
        if replicator is not None:
            await replicator.close()
        name = cursor_name(remote)
        if name in self.ml.cursors:
            await self.ml.delete_cursor(name)
        log.info("replicator_removed", topic=str(self.topic), remote=remote)

    async def close(self) -> None:
        """Stop every replicator; the cursors stay for the next owner."""
        async with self._lock:
            self._closed = True
            replicators = list(self.replicators.values())
            self.replicators.clear()
        await asyncio.gather(*(r.close() for r in replicators))
