"""One replicator: a topic's entries copied to one remote cluster (Pulsar's PersistentReplicator).

The I/O shell around :class:`~.window.ReplicationWindow`. It reads the local log through the
durable cursor ``pulsar.repl.{remote}`` and publishes each entry, metadata and payload as
stored (plus ``replicated_from``; a schema version becomes the remote's version of the same
schema, registered there first), through a :class:`~.remote.RemoteProducer` named
``pulsar.repl.{local}``. The cursor is mark-deleted only over entries whose SEND_RECEIPT came
back (or that were filtered out), so a crash of this broker resends at most the window, which
the remote's deduplication drops.

Lifecycle: :meth:`Replicator.start` runs one task until :meth:`Replicator.close`. The task reads
the remote's ClusterData (fresh on every attempt: an updated URL is picked up), creates the
producer, then reads and sends while a second task moves the mark-delete as receipts settle the
window. A producer failure ends the round: the producer is closed, the window dropped, the
cursor rewound to its mark-delete, and the next round starts after a capped, jittered backoff
(``backoff.RECONNECT``). While the remote is away the client keeps what is in flight and
reconnects by itself; the cursor stays put and the backlog grows, visible in the stats. A
producer detached for ``detached_timeout_s`` with entries in flight ends the round too (its
client may be looking up through a remote host that is gone).

Bounds: at most ``window_entries`` entries and ``window_bytes`` bytes in flight; reads of at
most ``read_batch`` entries.

Concurrency: on the broker's loop; the owning topic starts and closes it. Receipt callbacks
run on the loop from the client's reader and only touch the window of their own round.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from magnetar.backoff import RECONNECT
from magnetar.broker.entry import split_entry
from magnetar.broker.replication.names import producer_name
from magnetar.broker.replication.remote import RemoteClusters, RemoteProducer
from magnetar.broker.replication.window import (
    ReplicationWindow,
    replicated_metadata,
    should_replicate,
)
from magnetar.broker.stats import RateMeter
from magnetar.cancellation import cancel_and_wait
from magnetar.managed_ledger import ManagedCursor, ManagedLedger, Position
from magnetar.naming import TopicName
from magnetar.policies import ClusterData
from magnetar.protocol.message_id import MessageId
from magnetar.schema import SchemaData, SchemaError, decode_version, encode_version
from magnetar.telemetry import get_logger

log = get_logger(__name__)

_WAIT_NEW_ENTRIES_S = 1.0  # a read with nothing new returns after this (to notice a failure)


@dataclass(frozen=True, slots=True)
class ReplicatorConfig:
    """Broker settings (Pulsar's broker.conf names in the comments)."""

    window_entries: int = 1000  # replicationProducerQueueSize
    window_bytes: int = 64 * 1024 * 1024
    read_batch: int = 100  # dispatcherMaxReadBatchSize, the replicator's read size
    close_timeout_s: float = 5.0
    # A producer detached this long with entries in flight ends the round: the next one
    # creates a new producer (and may reach the remote through another of its hosts).
    detached_timeout_s: float = 30.0


class _RoundFailed(Exception):
    """A send failed: the round ends and the next one resends from the mark-delete."""


class Replicator:
    """Copies one topic (or partition) to one remote cluster."""

    def __init__(
        self,
        topic: TopicName,
        ml: ManagedLedger,
        cursor: ManagedCursor,
        *,
        local: str,
        remote: str,
        remotes: RemoteClusters,
        cluster_data: Callable[[str], Awaitable[ClusterData]],
        partitions: int,
        config: ReplicatorConfig,
        schema_at: Callable[[TopicName, int], Awaitable[SchemaData | None]] | None = None,
    ) -> None:
        self.topic = topic
        self.ml = ml
        self.cursor = cursor
        self.local = local
        self.remote = remote
        self._remotes = remotes
        self._cluster_data = cluster_data
        self._partitions = partitions
        self.config = config
        self._schema_at = schema_at
        self._remote_schemas: dict[bytes, bytes] = {}  # local version -> the remote's
        self.rate_out = RateMeter()
        self._producer: RemoteProducer | None = None
        self._window = self._new_window()
        self._failure: asyncio.Future[None] | None = None
        self._settled = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._head_publish_ms: int | None = None  # the backlog's first entry, while detached
        self.connected_since: float | None = None  # when the current producer was created

    @property
    def connected(self) -> bool:
        producer = self._producer
        return producer is not None and producer.is_connected

    @property
    def outbound_connection(self) -> str | None:
        producer = self._producer
        return None if producer is None else producer.connected_address

    @property
    def backlog(self) -> int:
        """Entries not yet acknowledged by the remote (Pulsar's replicationBacklog)."""
        return self.cursor.backlog

    def delay_s(self, now_ms: int | None = None) -> int:
        """Seconds since the oldest entry the remote lacks was published (0: none)."""
        if self.backlog == 0:
            return 0
        oldest = self._window.oldest_publish_time_ms or self._head_publish_ms
        if oldest is None:
            return 0
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        return max(0, (now_ms - oldest) // 1000)

    def _new_window(self) -> ReplicationWindow:
        return ReplicationWindow(self.config.window_entries, self.config.window_bytes)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(
                self._run(), name=f"replicator-{self.topic}-{self.remote}"
            )

    async def close(self) -> None:
        """Stop replicating; the cursor keeps its place (bounded)."""
        await cancel_and_wait(self._task)
        self._task = None
        await self._close_producer()

    async def _close_producer(self) -> None:
        producer, self._producer = self._producer, None
        self.connected_since = None
        if producer is None:
            return
        try:
            async with asyncio.timeout(self.config.close_timeout_s):
                await producer.close(drain=False)  # the next round or owner resends
        except Exception as exc:  # TimeoutError included
            log.info("replicator_producer_close_failed", topic=str(self.topic),
                     remote=self.remote, error=repr(exc))  # fmt: skip

    # ------------------------------------------------------------------ rounds
    async def _run(self) -> None:
        backoff = RECONNECT.backoff()
        while True:
            try:
                await self._round(backoff.reset)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("replicator_round_failed", topic=str(self.topic),
                            remote=self.remote, error=repr(exc))  # fmt: skip
            self._window = self._new_window()  # late receipts of this round are ignored
            await self._close_producer()
            await self._rewind()
            await asyncio.sleep(backoff.next())

    async def _rewind(self) -> None:
        try:
            # Seeking to the mark-delete itself lands on the entry after it (never past the end).
            await self.cursor.seek(self.cursor.mark_delete_position)
            await self._peek_head()
        except Exception as exc:
            log.info("replicator_rewind_failed", topic=str(self.topic), error=repr(exc))

    async def _peek_head(self) -> None:
        """Note the backlog's first publish time, for the delay stat while detached."""
        self._head_publish_ms = None
        if self.cursor.backlog == 0:
            return
        entries = await self.ml.read_entries(self.cursor.mark_delete_position.after(), 1)
        if entries:
            self._head_publish_ms = split_entry(entries[0].data)[0].publish_time

    async def _round(self, progressed: Callable[[], None]) -> None:
        data = await self._cluster_data(self.remote)
        self._producer = await self._remotes.create_producer(
            self.remote,
            data,
            self.topic,
            producer_name=producer_name(self.local),
            partitions=self._partitions,
            max_pending=self.config.window_entries,
        )
        self.connected_since = time.time()
        progressed()
        log.info("replicator_started", topic=str(self.topic), remote=self.remote,
                 position=str(self.cursor.mark_delete_position))  # fmt: skip
        failure = self._failure = asyncio.get_running_loop().create_future()
        try:
            async with asyncio.TaskGroup() as tg:
                tg.create_task(self._acknowledge(self._producer, self._window))
                await self._send_loop(self._producer, self._window)
        except* _RoundFailed as group:
            raise group.exceptions[0] from None
        finally:
            if failure.done() and not failure.cancelled():
                failure.exception()  # retrieved: the round's end already reports it
            else:
                failure.cancel()  # a late failed receipt must not set it

    async def _send_loop(self, producer: RemoteProducer, window: ReplicationWindow) -> None:
        failure = self._failure
        assert failure is not None
        while True:
            if failure.done():
                failure.result()
            while window.room <= 0:
                self._settled.clear()
                await self._wait_settled(failure)
            entries = await self.cursor.read_entries_or_wait(
                min(window.room, self.config.read_batch), _WAIT_NEW_ENTRIES_S
            )
            for entry in entries:
                metadata, payload = split_entry(entry.data)
                if not should_replicate(metadata, self.remote) or not metadata.producer_name:
                    window.skipped(entry.position, metadata.publish_time)
                    self._settled.set()
                    continue
                copy = replicated_metadata(metadata, self.local)
                if copy.schema_version:
                    copy.schema_version = await self._remote_schema(copy.schema_version)
                window.sent(entry.position, len(entry.data), metadata.publish_time)
                messages = max(1, metadata.num_messages_in_batch)
                sent = await producer.send_entry(copy, payload)
                sent.add_done_callback(
                    functools.partial(
                        self._receipt, window, entry.position, messages, len(entry.data)
                    )
                )

    async def _remote_schema(self, local: bytes) -> bytes:
        """The remote's version of the local schema version ``local``, registering the schema
        there first (Pulsar's replicators carry schemas too). A version the local registry does
        not know (deleted, say) is passed on as it is."""
        found = self._remote_schemas.get(local)
        if found is not None:
            return found
        schema = None
        if self._schema_at is not None:
            try:
                schema = await self._schema_at(self.topic, decode_version(local))
            except SchemaError:
                schema = None
        if schema is None:
            return local
        data = await self._cluster_data(self.remote)
        version = await self._remotes.register_schema(self.remote, data, self.topic, schema)
        found = self._remote_schemas[local] = encode_version(version)
        return found

    async def _wait_settled(self, failure: asyncio.Future[None]) -> None:
        waiter: asyncio.Future[object] = asyncio.ensure_future(self._settled.wait())
        watched: list[asyncio.Future[object]] = [waiter, failure]  # type: ignore[list-item]
        try:
            await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
        if failure.done():
            failure.result()

    def _receipt(
        self,
        window: ReplicationWindow,
        position: Position,
        messages: int,
        size: int,
        sent: asyncio.Future[MessageId],
    ) -> None:
        if window is not self._window:
            return  # a round that has ended
        if sent.cancelled() or sent.exception() is not None:
            failure = self._failure
            if failure is not None and not failure.done():
                error = "cancelled" if sent.cancelled() else repr(sent.exception())
                failure.set_exception(_RoundFailed(f"send to {self.remote} failed: {error}"))
            return
        window.acknowledged(position)
        self.rate_out.record(messages, size)
        self._settled.set()

    async def _acknowledge(self, producer: RemoteProducer, window: ReplicationWindow) -> None:
        """Move the cursor's mark-delete over what the remote has stored; end the round when
        the producer stays detached with entries in flight."""
        failure = self._failure
        assert failure is not None
        loop = asyncio.get_running_loop()
        detached_since: float | None = None
        while True:
            self._settled.clear()
            target = window.take_mark_delete()
            if target is not None:
                await self.cursor.mark_delete(target)
                continue
            try:
                async with asyncio.timeout(_WAIT_NEW_ENTRIES_S):
                    await self._wait_settled(failure)
            except TimeoutError:
                pass
            if producer.is_connected or not len(window):
                detached_since = None
            elif detached_since is None:
                detached_since = loop.time()
            elif loop.time() - detached_since >= self.config.detached_timeout_s:
                raise _RoundFailed(
                    f"no connection to {self.remote} for {self.config.detached_timeout_s:.0f}s"
                )
