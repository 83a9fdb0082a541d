"""A subscription on a persistent topic: its cursor, its consumers, and the dispatcher task.

Decisions come from the sans-I/O cores of :mod:`magnetar.broker.dispatch`: membership and the
active consumer (Exclusive, Failover with ACTIVE_CONSUMER_CHANGE, Shared rotation, Key_Shared
AUTO_SPLIT / STICKY ranges with the recently-joined and draining rules), who gets which entries
(``plan_dispatch``), pending acks (individual, cumulative, batch-index ack sets) and the
redelivery queue with redelivery counts. This module does the I/O around them: reading entries,
writing MESSAGE frames, persisting acks through the cursor.

The dispatcher (one task per subscription, started with the first consumer) loops: while some
consumer has permits, read entries waiting for redelivery and then new ones from the cursor,
plan, send, record pending; what nobody could take goes to the redelivery queue. Key_Shared
reads only the replays that can go out now (``dispatch.key_shared_replayable``), so the entries
parked for a consumer without permits do not hold back the keys of the others — until
``MAX_KEY_SHARED_LOOKAHEAD`` entries wait for redelivery: then no step reads new entries, for
any consumer (Pulsar's look-ahead limit), so one read step past the limit (at most
``MAX_READ_ENTRIES``) is all that parking adds beyond it. When nothing could go out it waits
for a FLOW, an ack, a membership change or new entries — all of which set one event (new
entries through a managed-ledger listener, no helper tasks per wait).

Work is per run, not per entry, where the rules allow: a step reads a run of entries, takes
each one's dispatch facts (messages, key, deliver-at time, chunk) from the cached entry or
parses them once and leaves them with it (``ManagedLedger.remember_entry_infos``), plans the run
once, and hands each consumer its share in one call (``Consumer.write_messages``: every MESSAGE
frame queued on the connection at once; ``PendingAcks.add_run``; permits charged once). An ACK
frame without ack sets is applied as a run too (``_ack_entries``): one pass over the pending
acks and the redelivery queue, and the cursor records each span of consecutive entries as one
range or one mark-delete move.

Delayed delivery (Shared and Key_Shared, while the topic's effective ``delayedDelivery`` policy
is active): a new read whose ``deliver_at_time`` is in the future goes to the
:class:`~magnetar.broker.dispatch.DelayedDeliveryIndex` instead of to a consumer (no permits
used); at the start of each step the entries due by now move to the redelivery queue and go out
as replays. The wait between steps ends at the index's next due time, so no timer task exists
per message. While the index holds ``max_delayed`` entries no step reads new ones (they stay
in the log). Exclusive and Failover ignore ``deliver_at_time``, as Pulsar does; a subscription
that turns Exclusive, or a policy turned off, releases everything held at once. The index lives
in memory only: after a restart the cursor reads the unacknowledged delayed entries again and
they are held anew. A cursor reset clears it, and so does a mark-delete past everything it
holds (skip all, expiry); an entry acknowledged alone while held is dropped when it falls due.

Invariants: an entry is pending on at most one consumer, or queued for redelivery, never both;
acknowledged entries are never dispatched again (checked against the cursor before every
redelivery). Permits count messages; a redelivered batch with acknowledged indexes counts only
the others and carries its remaining ack set. Partly acked batches are persisted with the
cursor (``ManagedCursor.delete_batch_indexes``), so after a restart only their unacked indexes
are delivered.

A read_compacted subscription (``compacted`` set by the topic) reads new entries through the
topic's compacted view (:mod:`magnetar.broker.compaction`) up to its horizon: the masks of the
batch messages that survive join the partly acked masks, so permits, pending acks and
redeliveries treat compacted-out messages as acknowledged.

Concurrency: on the broker's loop. ``_lock`` serialises a dispatch step (read + plan + send)
with a cursor reset, so a seek never races an in-flight read. Acks change the core state
synchronously, then wait for the cursor's persistence.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import TypeAlias

from magnetar.backoff import DISPATCH
from magnetar.broker.compaction import CompactedReads
from magnetar.broker.consumer import Consumer
from magnetar.broker.dispatch import (
    Candidate,
    ChunkAffinity,
    ChunkTag,
    ConsumerKey,
    ConsumerSlot,
    DelayedDeliveryIndex,
    DispatchPlan,
    ExclusiveSelector,
    FailoverChange,
    FailoverSelector,
    KeySharedSelector,
    KeySharedView,
    PendingAck,
    PendingAcks,
    RecentlyJoined,
    RedeliveryCounts,
    RedeliveryQueue,
    SharedSelector,
    SubType,
    check_sub_type,
    key_shared_replayable,
    make_key_shared_selector,
    mask_to_ack_set,
    plan_dispatch,
)
from magnetar.broker.entry import entry_info
from magnetar.broker.errors import MetadataProblem
from magnetar.broker.stats import OutTotals, RateMeter
from magnetar.managed_ledger import Entry, ManagedCursor, ManagedLedger, Position
from magnetar.managed_ledger.errors import InvalidPosition
from magnetar.policies import DelayedDeliveryPolicies
from magnetar.protocol import commands
from magnetar.protocol.message_id import MessageId
from magnetar.protocol.version import V_LAST_MESSAGE_ID
from magnetar.telemetry import get_logger
from magnetar.wire import pulsar_api_pb2 as pb

log = get_logger(__name__)
# NamedTuple's generated __new__ is a Python-level lambda: the per-entry lines below build
# their tuples with tuple.__new__ directly (about half the cost).
_new_tuple = tuple.__new__

MAX_READ_ENTRIES = 100
# Key_Shared: no new reads while this many entries wait for redelivery (Pulsar's
# keySharedLookAheadMsgInReplayThresholdPerSubscription default): keys of a consumer without
# permits are parked there while the others' keys flow; past this, everyone's new reads wait.
MAX_KEY_SHARED_LOOKAHEAD = 20_000
_WAIT_NEW_ENTRIES_S = 30.0
_HOLDING_TYPES = (SubType.SHARED, SubType.KEY_SHARED)  # where deliver_at_time applies
# Due delayed entries move to the redelivery queue only while it holds fewer than this: a
# million entries due at once go out step by step, never as one long blocking move.
_RELEASE_BATCH = 1000


def _now_ms() -> int:
    return int(time.time() * 1000)  # deliver_at_time is the producer's wall clock


Selector: TypeAlias = ExclusiveSelector | FailoverSelector | SharedSelector | KeySharedSelector
# What dispatch needs of an entry's metadata: messages in it, key, deliver-at time (epoch ms, 0:
# at once), chunk. A plain tuple, kept with the cached entry (ManagedLedger.remember_entry_infos):
# CPython's GC stops tracking exact tuples of ints and bytes, so a full cache costs no GC work.
Facts: TypeAlias = tuple[int, bytes, int, ChunkTag | None]


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
        partition_index: int = -1,
        delayed_delivery: Callable[[], DelayedDeliveryPolicies] = DelayedDeliveryPolicies,
        max_delayed: int = 1_000_000,
    ) -> None:
        self.topic = topic
        self.name = name
        self.ml = ml
        self.cursor = cursor
        self.sub_type = SubType(sub_type)
        self.durable = durable
        self.partition_index = partition_index
        self.consumers: list[Consumer] = []
        self._by_key: dict[ConsumerKey, Consumer] = {}
        self._selector: Selector | None = None
        self._recent = RecentlyJoined()
        self._pending = PendingAcks()
        self._replay = RedeliveryQueue()
        self._counts = RedeliveryCounts()
        # Unacked-index masks of partly acked batches waiting in the redelivery queue.
        self._masks: dict[Position, int] = {}
        self._delayed_policy = delayed_delivery  # the topic's effective policy, read per step
        self._delayed = DelayedDeliveryIndex(delayed_delivery().tick_time, max_delayed)
        self._chunks = ChunkAffinity()  # Shared: who gets the rest of each chunked message
        self._lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._unlisten: Callable[[], None] | None = None  # new entries set _wake
        self._backstop: asyncio.TimerHandle | None = None  # sets _wake (see _wait_wake)
        self._closed = False
        self.rate_expired = RateMeter()  # fed by whoever expires messages (TTL, admin)
        self.out_of_removed = OutTotals()  # what departed consumers dispatched
        self.compacted: CompactedReads | None = None  # read_compacted: set by the topic

    # ------------------------------------------------------------------ consumers
    def add_consumer(self, consumer: Consumer) -> None:
        if self._closed:
            raise MetadataProblem(f"subscription {self.name!r} is closed")
        requested = SubType(consumer.sub_type)
        check_sub_type(self.sub_type if self.consumers else None, requested)
        if not self.consumers:
            self.sub_type = requested
            self._selector = self._new_selector(consumer)
        selector = self._selector
        info = consumer.info
        if isinstance(selector, FailoverSelector):
            change = selector.add(info)
        else:
            assert selector is not None
            selector.add(info)
            change = None
        if self.sub_type == SubType.KEY_SHARED:
            self._recent.joined(info.key, self.cursor.read_position, self._oldest_unacked())
        consumer.unacked_counter = lambda: self._pending.unacked_messages(info.key)
        self.consumers.append(consumer)
        self._by_key[info.key] = consumer
        if change is not None:
            self._failover_changed(change)
        self._ensure_task()
        self._wake.set()

    def _new_selector(self, consumer: Consumer) -> Selector:
        if self.sub_type == SubType.EXCLUSIVE:
            return ExclusiveSelector()
        if self.sub_type == SubType.FAILOVER:
            return FailoverSelector(self.partition_index)
        if self.sub_type == SubType.SHARED:
            return SharedSelector()
        return make_key_shared_selector(consumer.key_shared)

    def remove_consumer(self, consumer: Consumer) -> None:
        """The consumer left (closed, disconnected): its unacked entries go back."""
        key = consumer.key
        if self._by_key.get(key) is not consumer:
            return
        del self._by_key[key]
        self.consumers.remove(consumer)
        self.out_of_removed.add(consumer.messages_out, consumer.bytes_out)
        selector = self._selector
        change = selector.remove(key) if selector is not None else None
        self._recent.left(key)
        self._chunks.consumer_removed(key)
        self._put_back(self._pending.remove_consumer(key), count=True)
        if isinstance(change, FailoverChange):
            self._failover_changed(change)
        if not self.consumers:
            self._selector = None
        self._wake.set()

    def _failover_changed(self, change: FailoverChange) -> None:
        for event in change.events:
            c = self._by_key.get(event.consumer)
            if c is not None and c.cnx.is_open and c.cnx.features.at_least(V_LAST_MESSAGE_ID):
                c.cnx.write_command(commands.active_consumer_change(c.consumer_id, event.is_active))
        if change.previous_active not in (None, change.active):
            assert change.previous_active is not None
            # The standby takes over with the entries the previous active one left unacked.
            self._put_back(self._pending.remove_consumer(change.previous_active), count=False)

    def _put_back(self, records: Sequence[PendingAck], *, count: bool) -> None:
        for record in records:
            pos = record.position
            if self.cursor.is_acknowledged(pos):
                continue
            if record.partly_acked:
                self._masks[pos] = record.unacked
            self._replay.add(pos, record.sticky_hash)
            if count:
                self._counts.increment(pos)

    def flow(self, consumer: Consumer, permits: int) -> None:
        consumer.permits += permits
        self._wake.set()

    # ------------------------------------------------------------------ dispatcher
    def _ensure_task(self) -> None:
        if self._unlisten is None:
            self._unlisten = self.ml.add_new_entries_listener(self._wake.set)
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name=f"dispatch-{self.name}")

    @staticmethod
    def _can_take(consumer: Consumer) -> bool:
        return consumer.permits > 0 and consumer.cnx.is_open and not consumer.closed

    def _ready(self) -> bool:
        return any(self._can_take(c) for c in self.consumers)

    async def _run(self) -> None:
        # A hand-written loop rather than retry(): it runs until the subscription closes, waits
        # for permits and new entries between steps, and resets its backoff on every success.
        backoff = DISPATCH.backoff()
        while not self._closed:
            if not self._ready():
                self._wake.clear()
                await self._wake.wait()
                continue
            self._wake.clear()
            try:
                async with self._lock:
                    progress = await self._dispatch_once()
            except Exception as exc:
                log.warning("dispatch_failed", topic=self.topic, subscription=self.name,
                            error=repr(exc))  # fmt: skip
                await asyncio.sleep(backoff.next())
                continue
            backoff.reset()
            if not progress:
                await self._wait_wake()

    async def _wait_wake(self) -> None:
        """Until new entries, permits or a change (all set ``_wake``), the next delayed entry's
        due time, or at most ``_WAIT_NEW_ENTRIES_S``.

        The last bound is a periodic timer that sets ``_wake`` (a spurious wake only runs a
        step), armed once per period rather than per wait: at a paced rate the dispatcher waits
        once per journal group, and a timeout scope per wait was a timer scheduled and
        cancelled each time."""
        wake = self._wake
        if wake.is_set():
            return
        due = self._delayed.next_due_time()
        if due is not None and len(self._replay) < _RELEASE_BATCH:
            # (With the queue full, what was released waits for permits: FLOW sets _wake.)
            wait_s = min(_WAIT_NEW_ENTRIES_S, max(0.0, (due - _now_ms()) / 1000))
            timer = asyncio.get_running_loop().call_later(wait_s, wake.set)
            try:
                await wake.wait()
            finally:
                timer.cancel()
            return
        if self._backstop is None:
            self._backstop = asyncio.get_running_loop().call_later(
                _WAIT_NEW_ENTRIES_S, self._backstop_fired
            )
        await wake.wait()

    def _backstop_fired(self) -> None:
        self._backstop = None
        self._wake.set()

    def _read_budget(self) -> int:
        permits = sum(max(0, c.permits) for c in self.consumers if self._can_take(c))
        return max(1, min(MAX_READ_ENTRIES, permits))

    async def _read_replays(self, budget: int, view: KeySharedView | None) -> list[Entry]:
        # Key_Shared reads only replays that can go out now: entries waiting for a consumer
        # without permits must not fill the budget and starve the other consumers' keys.
        accept = None
        if view is not None:
            accept = key_shared_replayable(view, lambda k: self._can_take(self._by_key[k]))
        wanted: list[Position] = []
        compacted = self.compacted
        readable = self.ml.layout.contains if compacted is None else compacted.readable
        for pos in self._replay.positions(budget, accept):
            if self.cursor.is_acknowledged(pos) or not readable(pos):
                self._replay.remove(pos)
                self._masks.pop(pos, None)
            else:
                wanted.append(pos)
        if not wanted:
            return []
        read = self.ml.read_positions if compacted is None else compacted.read_positions
        return await read(wanted)

    async def _dispatch_once(self) -> bool:
        """One step: read, plan, send. True if anything went out and another step may send more
        at once: the read filled the budget, or entries wait for redelivery. Otherwise the
        dispatcher waits for ``_wake``, which everything that could let more go out sets (new
        entries, FLOW, acks, membership), also while this step ran."""
        now_ms = _now_ms()
        holding = self._holds_delayed()
        self._forget_acknowledged_delayed()
        if self._delayed:
            self._release_delayed(now_ms if holding else None)
        budget = self._read_budget()
        view = self._key_shared_view()
        replays = await self._read_replays(budget, view) if self._replay else []
        fresh: list[Entry] = []
        parked = view is not None and len(self._replay) >= MAX_KEY_SHARED_LOOKAHEAD
        if len(replays) < budget and not parked and not (holding and self._delayed.full):
            fresh = await self._read_fresh(budget - len(replays))
        if not replays and not fresh:
            self._check_end_of_topic()
            return False
        entries = replays + fresh if replays else fresh
        replayed = {e.position for e in replays}
        held = 0
        # Each entry's facts are parsed once (and kept with the cached entry, so a replay or
        # another subscription does not parse again) and its unacked-index mask looked up
        # once, here; the plan (pure) hands back the candidates, the rest is found by position.
        masks, batch_masks = self._masks, self.cursor.batch_masks
        prepared: dict[Position, tuple[bytes, Facts, int | None]] = {}
        candidates: list[Candidate] = []
        chunks: dict[Position, ChunkTag] = {}
        learned: list[tuple[Position, object]] = []
        for pos, data, known in entries:
            facts: Facts
            if known is None:
                info = entry_info(data)
                facts = (info.messages, info.key, info.deliver_at, info.chunk)
                learned.append((pos, facts))
            else:
                facts = known  # type: ignore[assignment]  # only this class remembers facts
            mask = masks.get(pos) if masks else None
            if mask is None and batch_masks:
                mask = batch_masks.get(pos)
            count = facts[0] if mask is None else mask.bit_count()
            cand = _new_tuple(Candidate, (pos, count if count > 1 else 1, facts[1] or None))
            if holding and facts[2] > now_ms and pos not in replayed:
                self._delayed.add(pos, facts[2], self._slot(cand))
                held += 1
                continue
            chunk = facts[3]
            if chunk is not None:
                chunks[pos] = chunk
            candidates.append(cand)
            prepared[pos] = (data, facts, mask)
        if learned:
            self.ml.remember_entry_infos(learned)
        plan = self._plan(candidates, replayed, view, chunks)
        key_shared = self.sub_type == SubType.KEY_SHARED
        sent = 0
        for key, planned in plan.assignments:
            self._send_run(self._by_key[key], key, planned, prepared, key_shared)
            sent += len(planned)
        for cand in plan.leftovers:
            self._replay.add(cand.position, self._slot(cand))
        if isinstance(self._selector, SharedSelector):
            self._selector.served(plan.last_served)
        return (sent > 0 or held > 0) and (len(entries) >= budget or bool(self._replay))

    # ------------------------------------------------------------------ delayed delivery
    def _holds_delayed(self) -> bool:
        """Whether this step holds entries back until their deliver-at time."""
        if self.sub_type not in _HOLDING_TYPES:
            return False
        policy = self._delayed_policy()
        if policy.active and not self._delayed and policy.tick_time != self._delayed.tick_ms:
            self._delayed = DelayedDeliveryIndex(policy.tick_time, self._delayed.limit)
        return policy.active

    def _release_delayed(self, now_ms: int | None) -> None:
        """Held entries due by ``now_ms`` (None: due or not) join the redelivery queue, while
        it holds fewer than ``_RELEASE_BATCH``."""
        room = _RELEASE_BATCH - len(self._replay)
        if room <= 0:
            return
        index = self._delayed
        due = index.due(now_ms, room) if now_ms is not None else index.drain(room)
        for pos, slot in due:
            if self.cursor.is_acknowledged(pos):
                continue
            self._replay.add(pos, slot)

    def _forget_acknowledged_delayed(self) -> None:
        """Clear the index when the mark-delete passed all it holds (skip all, expiry); single
        acknowledged entries are dropped when they fall due."""
        last = self._delayed.last_position
        if last is not None and self.cursor.mark_delete_position >= last:
            self._delayed.clear()

    @property
    def delayed_count(self) -> int:
        """Entries held for delayed delivery (Pulsar's ``msgDelayed``)."""
        self._forget_acknowledged_delayed()
        return len(self._delayed)

    async def _read_fresh(self, max_entries: int) -> list[Entry]:
        """New entries from the cursor; read_compacted: through the compacted view first, the
        batches some of whose messages were compacted out carrying the mask of the others."""
        if self.compacted is None:
            cached = self.cursor.read_cached(max_entries)  # a consumer that keeps up: no await
            return cached if cached is not None else await self.cursor.read_entries(max_entries)
        entries, survivors = await self.compacted.read_entries(max_entries)
        for pos, mask in survivors.items():
            acked = self.cursor.batch_unacked(pos)
            self._masks[pos] = mask if acked is None else mask & acked
        return entries

    def _slot(self, cand: Candidate) -> int | None:
        return cand.sticky_hash if self.sub_type == SubType.KEY_SHARED else None

    def _key_shared_view(self) -> KeySharedView | None:
        """What the Key_Shared rules need for one step (None for the other types)."""
        selector = self._selector
        if self.sub_type != SubType.KEY_SHARED or selector is None:
            return None
        assert not isinstance(selector, ExclusiveSelector | FailoverSelector | SharedSelector)
        allow = any(
            c.key_shared is not None and c.key_shared.allow_out_of_order_delivery
            for c in self.consumers
        )
        return KeySharedView(
            selector.select, self._recent.limits(), self._pending.holders_of_hash, allow
        )

    def _plan(
        self,
        candidates: list[Candidate],
        replayed: set[Position],
        view: KeySharedView | None,
        chunks: dict[Position, ChunkTag],
    ) -> DispatchPlan:
        selector = self._selector
        slots = [
            ConsumerSlot(c.key, c.permits if self._can_take(c) else 0, c.priority)
            for c in self._rotation()
        ]
        active = (
            selector.active if isinstance(selector, ExclusiveSelector | FailoverSelector) else None
        )
        return plan_dispatch(
            self.sub_type,
            slots,
            candidates,
            active=active,
            redelivery=replayed,
            blocked_hashes=self._replay.hashes() if self._replay else frozenset(),
            key_shared=view,
            chunks=chunks,
            affinity=self._chunks,
        )

    def _rotation(self) -> list[Consumer]:
        if isinstance(self._selector, SharedSelector):
            return [self._by_key[info.key] for info in self._selector.rotation()]
        return list(self.consumers)

    def _send_run(
        self,
        consumer: Consumer,
        key: ConsumerKey,
        planned: Sequence[Candidate],
        prepared: dict[Position, tuple[bytes, Facts, int | None]],
        key_shared: bool,
    ) -> None:
        """Send one consumer the entries the plan gave it (in order): their MESSAGE frames in
        one write, their pending records in one call, the permits charged once. ``prepared``
        has each entry's stored bytes, facts and unacked-index mask (None: all unacked)."""
        counts = self._counts
        positions = [cand.position for cand in planned]
        self._forget_redelivery(positions)
        datas: list[bytes] = []
        batch_sizes: list[int] = []
        unacked: list[int | None] | None = None
        messages = size = 0
        for i, cand in enumerate(planned):
            data, facts, mask = prepared[cand.position]
            datas.append(data)
            batch_sizes.append(facts[0] if facts[0] > 1 else 1)
            size += len(data)
            messages += cand.message_count
            if mask is not None:
                if unacked is None:
                    unacked = [None] * len(planned)
                unacked[i] = mask
        consumer.write_messages(
            positions,
            datas,
            [counts.count(pos) for pos in positions] if counts else None,
            [None if m is None else mask_to_ack_set(m) for m in unacked] if unacked else None,
        )
        self._pending.add_run(
            key,
            positions,
            batch_sizes,
            [cand.sticky_hash for cand in planned] if key_shared else None,
            unacked,
        )
        consumer.delivered(messages, size)  # once per consumer and step

    def _forget_redelivery(self, positions: list[Position]) -> None:
        """Entries sent or acknowledged: out of the redelivery queue, their waiting masks
        dropped (one test each when neither holds anything, the common case)."""
        if replay := self._replay:
            for pos in positions:
                replay.remove(pos)
        if masks := self._masks:
            for pos in positions:
                masks.pop(pos, None)

    def _oldest_unacked(self) -> Position | None:
        options = [self.cursor.read_position]
        if (oldest := self._pending.oldest()) is not None:
            options.append(oldest)
        options += self._replay.positions(1)
        return min(options)

    # ------------------------------------------------------------------ acks
    async def acknowledge(
        self,
        consumer: Consumer,
        ack_type: pb.CommandAck.AckType.ValueType,
        ids: Sequence[tuple[Position, int | None]],
    ) -> None:
        """Acks of one ACK frame: each id's entry position and its ack-set mask (bit i set =
        index i still unacked, ``dispatch.ack_set_to_mask``), None without an ack set."""
        if ack_type == pb.CommandAck.Cumulative:
            if self.sub_type in (SubType.SHARED, SubType.KEY_SHARED) or len(ids) != 1:
                return
            await self._ack_cumulative(*ids[0])
        else:
            await self._ack_individual(ids)
        self._acked()

    async def acknowledge_entries(self, positions: list[Position]) -> None:
        """:meth:`acknowledge` of an individual ACK of whole entries (no ack sets)."""
        await self._ack_entries(positions)
        self._acked()

    def _acked(self) -> None:
        """After an ACK frame's acks: release recently joined Key_Shared consumers' holds and
        wake the dispatcher."""
        if self._recent:  # only Key_Shared consumers that joined with entries unacked
            self._recent.release(self._oldest_unacked())
        self._wake.set()

    async def _ack_cumulative(self, pos: Position, mask: int | None) -> None:
        outcome = self._pending.ack_cumulative(pos, mask)
        target = pos.before() if outcome.partial else pos
        self._replay.remove_up_to(target)
        self._counts.forget_up_to(target)
        for p in [p for p in self._masks if p <= target]:
            del self._masks[p]
        target = min(target, self.ml.layout.last_position())
        if target > self.cursor.mark_delete_position:
            try:
                await self.cursor.mark_delete(target)
            except InvalidPosition as exc:
                log.info("ack_ignored", topic=self.topic, subscription=self.name, error=str(exc))
        await self._persist_partial({r.position: r.unacked for r in outcome.partial})

    async def _ack_individual(self, ids: Sequence[tuple[Position, int | None]]) -> None:
        for _, mask in ids:
            if mask is not None:
                break
        else:
            await self._ack_entries([pos for pos, _ in ids])
            return
        acked: list[Position] = []
        partial: dict[Position, int] = {}
        pending, replay, masks = self._pending, self._replay, self._masks
        replaying = bool(replay)  # nothing below adds to it
        contains, is_acknowledged = self.ml.layout.contains, self.cursor.is_acknowledged
        for pos, mask in ids:
            if mask is None:
                # The common case (a whole entry): acked whether it was pending or not.
                pending.discard(pos)
                outcome_acked: tuple[Position, ...] = (pos,)
            else:
                outcome = pending.ack_individual(pos, mask)
                partial.update((r.position, r.unacked) for r in outcome.partial)
                if not outcome.acked and pos in masks:
                    masks[pos] &= mask  # a partly acked batch waiting for redelivery
                    if masks[pos]:
                        partial[pos] = masks[pos]
                        continue
                    outcome_acked = (pos,)
                else:
                    outcome_acked = outcome.acked
            for p in outcome_acked:
                if replaying:
                    replay.remove(p)
                if masks:
                    masks.pop(p, None)
                if contains(p) and not is_acknowledged(p):
                    acked.append(p)
        if self._counts:
            self._counts.forget(acked)
        if acked:
            await self.cursor.delete(acked)
        if partial:
            done = set(acked)
            await self._persist_partial({p: m for p, m in partial.items() if p not in done})

    async def _ack_entries(self, positions: list[Position]) -> None:
        """Individual acks of whole entries (an ACK frame without ack sets, the common case),
        as a run: each step is one call over the whole list, and the cursor records each span
        of consecutive entries as one range (or one mark-delete move)."""
        self._pending.discard_run(positions)
        self._forget_redelivery(positions)
        acked = self.cursor.unacknowledged(positions)
        if self._counts:
            self._counts.forget(acked)
        if acked:
            await self.cursor.delete(acked)

    async def _persist_partial(self, unacked: dict[Position, int]) -> None:
        """Record partly acked batches with the cursor, so a restart keeps their acked indexes."""
        unacked = {
            p: m
            for p, m in unacked.items()
            if self.ml.layout.contains(p) and not self.cursor.is_acknowledged(p)
        }
        if unacked:
            await self.cursor.delete_batch_indexes(unacked)

    # ------------------------------------------------------------------ redelivery
    def redeliver(self, consumer: Consumer, ids: Sequence[MessageId], epoch: int | None) -> None:
        if epoch is not None:
            consumer.epoch = epoch
        if not ids or self.sub_type in (SubType.EXCLUSIVE, SubType.FAILOVER):
            records = self._pending.redeliver(consumer.key, None)
        else:
            wanted = [Position(m.ledger_id, m.entry_id) for m in ids]  # type: ignore[arg-type]
            records = self._pending.redeliver(consumer.key, wanted)
        consumer.rate_redeliver.record(sum(r.unacked_count for r in records))
        self._put_back(records, count=True)
        self._wake.set()

    # ------------------------------------------------------------------ end of topic
    def topic_terminated(self) -> None:
        """The topic was terminated: consumers that have had everything are told at once."""
        self._check_end_of_topic()
        self._wake.set()

    def _check_end_of_topic(self) -> None:
        """Tell every consumer when the topic is terminated and nothing is left to dispatch."""
        end = self.ml.terminated_position
        if end is None or self._replay or self._delayed or self.cursor.read_position <= end:
            return
        for consumer in self.consumers:
            consumer.reached_end_of_topic()

    # ------------------------------------------------------------------ moves
    async def reset_cursor(self, pos: Position) -> None:
        """Make ``pos`` the next entry; consumers are told to resubscribe (as Pulsar does)."""
        for consumer in list(self.consumers):
            consumer.close_by_broker()
        self.consumers.clear()
        self._by_key.clear()
        self._selector = None
        self._recent = RecentlyJoined()
        async with self._lock:
            self._pending = PendingAcks()
            self._replay.clear()
            self._delayed.clear()
            self._chunks.clear()
            self._counts = RedeliveryCounts()
            self._masks.clear()
            await self.cursor.reset(pos)
            if self.compacted is not None:
                self.compacted.cursor_reset()
        self._wake.set()

    # ------------------------------------------------------------------ stats / close
    @property
    def backlog(self) -> int:
        return self.cursor.backlog

    async def close(self, *, disconnect: bool = True) -> None:
        self._closed = True
        if disconnect:
            for consumer in list(self.consumers):
                consumer.close_by_broker()
        self.consumers.clear()
        self._by_key.clear()
        self._wake.set()
        if self._unlisten is not None:
            self._unlisten()
            self._unlisten = None
        if self._backstop is not None:
            self._backstop.cancel()
            self._backstop = None
        if self._task is not None:
            self._task.cancel()
            await asyncio.wait([self._task])
            self._task = None
