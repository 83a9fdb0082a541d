"""A subscription on a persistent topic: its cursor, its consumers, and the dispatcher task.

The dispatcher (one task per subscription, started with the first consumer) loops: while some
consumer can take messages, read entries — entries put back for redelivery first, then new ones
from the cursor — and hand each to a consumer chosen by the subscription type:

* Exclusive: one consumer; a second gets ConsumerBusy.
* Failover: the active consumer is the first by (priority, name); the others stand by and get
  ACTIVE_CONSUMER_CHANGE; when the active one leaves its unacked entries go to the next.
* Shared: round robin over the consumers that have permits.
* Key_Shared: an entry's key hashes to exactly one consumer (of those connected, ordered by
  name); an entry whose consumer has no permits waits in the redelivery set.

Invariants: an entry is pending on at most one consumer; an entry is in the redelivery set or
pending, never both; acknowledged entries are never dispatched again (checked against the
cursor before every redelivery). Permits count messages; a batch entry with some indexes
acknowledged (batch-index ack sets) counts only its unacknowledged ones, and is sent with its
remaining ack set. Batch-index ack state lives in memory only (lost on restart: the whole batch
is redelivered, as Pulsar does without its ack-set persistence).

Concurrency: on the broker's loop. ``_lock`` serialises a dispatch step (read + route) with a
cursor reset, so a seek never races an in-flight read. Acks change cursor state synchronously,
then wait for persistence.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Sequence

from magnetar.backoff import Backoff
from magnetar.broker.consumer import Consumer
from magnetar.broker.entry import entry_info
from magnetar.broker.errors import ConsumerBusy, MetadataProblem
from magnetar.managed_ledger import Entry, ManagedCursor, ManagedLedger, Position
from magnetar.managed_ledger.errors import InvalidPosition
from magnetar.protocol import commands
from magnetar.protocol.message_id import (
    MessageId,
    ack_set_intersect,
    ack_set_unacked_count,
)
from magnetar.protocol.version import V_LAST_MESSAGE_ID
from magnetar.telemetry import get_logger
from magnetar.wire import pulsar_api_pb2 as pb

log = get_logger(__name__)

Sub = pb.CommandSubscribe
EXCLUSIVE = Sub.Exclusive
SHARED = Sub.Shared
FAILOVER = Sub.Failover
KEY_SHARED = Sub.Key_Shared
MAX_READ_ENTRIES = 100
_WAIT_NEW_ENTRIES_S = 30.0


class PersistentSubscription:
    def __init__(
        self,
        topic: str,
        name: str,
        ml: ManagedLedger,
        cursor: ManagedCursor,
        sub_type: pb.CommandSubscribe.SubType.ValueType,
        *,
        durable: bool = True,
    ) -> None:
        self.topic = topic
        self.name = name
        self.ml = ml
        self.cursor = cursor
        self.sub_type = sub_type
        self.durable = durable
        self.consumers: list[Consumer] = []
        self._replay: set[Position] = set()
        self._redelivery_counts: dict[Position, int] = {}
        self._owner: dict[Position, Consumer] = {}
        self._batch_acks: dict[Position, list[int]] = {}
        self._lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._next_shared = 0
        self._active: Consumer | None = None
        self._closed = False
        self.messages_acked = 0

    # ------------------------------------------------------------------ consumers
    def add_consumer(self, consumer: Consumer) -> None:
        if self._closed:
            raise MetadataProblem(f"subscription {self.name!r} is closed")
        if self.consumers:
            if consumer.sub_type != self.sub_type:
                raise ConsumerBusy(self.name, "Subscription is of different type")
            if self.sub_type == EXCLUSIVE:
                raise ConsumerBusy(self.name, "Exclusive consumer is already connected")
        else:
            self.sub_type = consumer.sub_type
        self.consumers.append(consumer)
        self._active_changed()
        self._ensure_task()
        self._wake.set()

    def remove_consumer(self, consumer: Consumer) -> None:
        """The consumer left (closed, disconnected): its unacked entries go back."""
        if consumer not in self.consumers:
            return
        self.consumers.remove(consumer)
        self._put_back(list(consumer.pending))
        consumer.pending.clear()
        self._active_changed()
        self._wake.set()

    def flow(self, consumer: Consumer, permits: int) -> None:
        consumer.permits += permits
        self._wake.set()

    def _active_changed(self) -> None:
        if self.sub_type != FAILOVER:
            self._active = self.consumers[0] if self.consumers else None
            return
        ordered = sorted(self.consumers, key=lambda c: (c.priority, c.name))
        active = ordered[0] if ordered else None
        if active is self._active:
            return
        self._active = active
        if active is not None:
            # Entries pending on standbys move to the new active consumer.
            for other in self.consumers:
                if other is not active and other.pending:
                    self._put_back(list(other.pending), count=False)
                    other.pending.clear()
        for c in self.consumers:
            if c.cnx.is_open and c.cnx.features.at_least(V_LAST_MESSAGE_ID):
                c.cnx.write_command(commands.active_consumer_change(c.consumer_id, c is active))

    def _put_back(self, positions: Sequence[Position], *, count: bool = True) -> None:
        for pos in positions:
            self._owner.pop(pos, None)
            if self.cursor.is_acknowledged(pos):
                continue
            self._replay.add(pos)
            if count:
                self._redelivery_counts[pos] = self._redelivery_counts.get(pos, 0) + 1

    # ------------------------------------------------------------------ dispatcher
    def _ensure_task(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name=f"dispatch-{self.name}")

    def _can_take(self, consumer: Consumer) -> bool:
        return consumer.permits > 0 and consumer.cnx.is_open and not consumer.closed

    def _ready(self) -> bool:
        if self.sub_type in (EXCLUSIVE, FAILOVER):
            return self._active is not None and self._can_take(self._active)
        return any(self._can_take(c) for c in self.consumers)

    async def _run(self) -> None:
        backoff = Backoff(initial=0.05, cap=2.0)
        while not self._closed:
            if not self._ready():
                self._wake.clear()
                await self._wake.wait()
                continue
            new_entries = self.ml.new_entries_signal()
            try:
                async with self._lock:
                    dispatched = await self._dispatch_once()
            except Exception as exc:
                log.warning("dispatch_failed", topic=self.topic, subscription=self.name,
                            error=repr(exc))  # fmt: skip
                await asyncio.sleep(backoff.next())
                continue
            backoff.reset()
            if not dispatched:
                await self._wait_any(new_entries)

    async def _wait_any(self, new_entries: asyncio.Event) -> None:
        self._wake.clear()
        waits = {
            asyncio.create_task(new_entries.wait()),
            asyncio.create_task(self._wake.wait()),
        }
        try:
            await asyncio.wait(waits, timeout=_WAIT_NEW_ENTRIES_S,
                               return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
        finally:
            for task in waits:
                task.cancel()
            await asyncio.wait(waits)

    def _read_budget(self) -> int:
        permits = sum(max(0, c.permits) for c in self.consumers)
        return max(1, min(MAX_READ_ENTRIES, permits))

    async def _dispatch_once(self) -> bool:
        budget = self._read_budget()
        entries: list[Entry]
        if self._replay:
            positions = sorted(self._replay)[:budget]
            self._replay.difference_update(positions)
            wanted = [p for p in positions if not self.cursor.is_acknowledged(p)]
            entries = await self.ml.read_positions(wanted) if wanted else []
            got = {e.position for e in entries}
            self._replay.update(p for p in wanted if p not in got and self.ml.layout.contains(p))
            if not entries:
                return bool(positions)
        else:
            entries = await self.cursor.read_entries(budget)
            if not entries:
                return False
        for entry in entries:
            self._route(entry)
        return True

    def _route(self, entry: Entry) -> None:
        pos = entry.position
        if self.cursor.is_acknowledged(pos) or pos in self._owner:
            return
        info = entry_info(entry.data)
        ack_set = self._batch_acks.get(pos)
        messages = info.messages if ack_set is None else ack_set_unacked_count(ack_set)
        consumer = self._select(info.key)
        if consumer is None:
            self._replay.add(pos)
            return
        consumer.deliver(
            pos,
            entry.data,
            messages,
            redelivery_count=self._redelivery_counts.get(pos, 0),
            ack_set=ack_set,
        )
        self._owner[pos] = consumer

    def _select(self, key: bytes) -> Consumer | None:
        if self.sub_type in (EXCLUSIVE, FAILOVER):
            active = self._active
            return active if active is not None and self._can_take(active) else None
        if not self.consumers:
            return None
        if self.sub_type == KEY_SHARED:
            ordered = sorted(self.consumers, key=lambda c: c.name)
            target = ordered[zlib.crc32(key) % len(ordered)]
            return target if self._can_take(target) else None
        n = len(self.consumers)
        for step in range(n):
            candidate = self.consumers[(self._next_shared + step) % n]
            if self._can_take(candidate):
                self._next_shared = (self._next_shared + step + 1) % n
                return candidate
        return None

    # ------------------------------------------------------------------ acks
    def _settled(self, pos: Position) -> None:
        owner = self._owner.pop(pos, None)
        if owner is not None:
            owner.pending.pop(pos, None)
        self._replay.discard(pos)
        self._redelivery_counts.pop(pos, None)
        self._batch_acks.pop(pos, None)

    async def acknowledge(
        self,
        consumer: Consumer,
        ack_type: pb.CommandAck.AckType.ValueType,
        ids: Sequence[tuple[MessageId, Sequence[int]]],
    ) -> None:
        if ack_type == pb.CommandAck.Cumulative:
            if self.sub_type in (SHARED, KEY_SHARED) or len(ids) != 1:
                return
            await self._ack_cumulative(*ids[0])
        else:
            await self._ack_individual(ids)

    def _partial(self, pos: Position, ack_set: Sequence[int]) -> bool:
        """Merge a batch-index ack set; True if indexes of the entry remain unacked."""
        merged = ack_set_intersect(self._batch_acks.get(pos, list(ack_set)), ack_set)
        if ack_set_unacked_count(merged) == 0:
            return False
        self._batch_acks[pos] = merged
        owner = self._owner.get(pos)
        if owner is not None and pos in owner.pending:
            owner.pending[pos] = ack_set_unacked_count(merged)
        return True

    async def _ack_cumulative(self, mid: MessageId, ack_set: Sequence[int]) -> None:
        pos = Position(mid.ledger_id, mid.entry_id)  # type: ignore[arg-type]
        target = pos
        if ack_set and self._partial(pos, ack_set):
            target = pos.before()
        for p in [p for p in self._owner if p <= target]:
            self._settled(p)
        self._replay = {p for p in self._replay if p > target}
        if target > self.cursor.mark_delete_position:
            target = min(target, self.ml.layout.last_position())
            try:
                await self.cursor.mark_delete(target)
            except InvalidPosition as exc:
                log.info("ack_ignored", topic=self.topic, subscription=self.name, error=str(exc))
        self.messages_acked += 1

    async def _ack_individual(self, ids: Sequence[tuple[MessageId, Sequence[int]]]) -> None:
        full: list[Position] = []
        for mid, ack_set in ids:
            pos = Position(mid.ledger_id, mid.entry_id)  # type: ignore[arg-type]
            if ack_set and self._partial(pos, ack_set):
                continue
            self._settled(pos)
            if self.ml.layout.contains(pos):
                full.append(pos)
        if full:
            self.messages_acked += len(full)
            await self.cursor.delete(full)

    # ------------------------------------------------------------------ redelivery
    def redeliver(self, consumer: Consumer, ids: Sequence[MessageId], epoch: int | None) -> None:
        if epoch is not None:
            consumer.epoch = epoch
        if not ids or self.sub_type in (EXCLUSIVE, FAILOVER):
            positions = list(consumer.pending)
        else:
            wanted = {Position(m.ledger_id, m.entry_id) for m in ids}  # type: ignore[arg-type]
            positions = [p for p in consumer.pending if p in wanted]
        for pos in positions:
            consumer.pending.pop(pos, None)
        self._put_back(positions)
        self._wake.set()

    # ------------------------------------------------------------------ moves
    async def reset_cursor(self, pos: Position) -> None:
        """Make ``pos`` the next entry; consumers are told to resubscribe (as Pulsar does)."""
        for consumer in list(self.consumers):
            consumer.close_by_broker()
            consumer.pending.clear()
        self.consumers.clear()
        self._active = None
        async with self._lock:
            self._replay.clear()
            self._owner.clear()
            self._redelivery_counts.clear()
            self._batch_acks.clear()
            await self.cursor.reset(pos)
        self._wake.set()

    # ------------------------------------------------------------------ stats / close
    @property
    def backlog(self) -> int:
        return self.cursor.backlog

    @property
    def type_name(self) -> str:
        return pb.CommandSubscribe.SubType.Name(self.sub_type)

    async def close(self, *, disconnect: bool = True) -> None:
        self._closed = True
        if disconnect:
            for consumer in list(self.consumers):
                consumer.close_by_broker()
        self.consumers.clear()
        self._wake.set()
        if self._task is not None:
            self._task.cancel()
            await asyncio.wait([self._task])
            self._task = None
