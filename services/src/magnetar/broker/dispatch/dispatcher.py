"""The dispatch plan: given consumers, their permits and a batch of entries, who gets what.

:func:`plan_dispatch` is pure: it reads its arguments and returns a :class:`DispatchPlan`
(``assignments`` per consumer, in delivery order, and ``leftovers``). The subscription's task
calls it after reading entries from the cursor (replays from the redelivery queue first, then new
reads, each group in position order), sends each consumer its entries, charges their permits and
records them as pending; leftovers go to the redelivery queue (or, for Exclusive/Failover, the
cursor is rewound to the first leftover).

Rules per type:

* EXCLUSIVE / FAILOVER — only the active consumer receives (``active``; for Exclusive the only
  consumer), a prefix of the entries while its permits are > 0.
* SHARED — each entry goes to the next consumer in round-robin order with permits > 0, serving
  the best priority level (lowest ``priority_level``) that has permits. ``consumers`` must be in
  rotation order (:meth:`SharedSelector.rotation`); call :meth:`SharedSelector.served` with
  :attr:`DispatchPlan.last_served` afterwards. The chunks of a chunked message (``chunks``: tags
  by position) all go to the consumer that got its first chunk (:mod:`.chunks`; the plan
  updates ``affinity``).
* KEY_SHARED — each entry goes to ``key_shared.select(slot)``. Once an entry of a slot cannot go
  out, no later entry of that slot in the batch goes out either (so the result does not depend on
  whether ``blocked_hashes`` counts the replays of this very batch). Unless out-of-order delivery is
  allowed, an entry is also held back when: it is a new read (position not in ``redelivery``)
  and its slot has entries waiting in ``blocked_hashes``; its consumer is recently joined and the
  position is at or past the consumer's limit (for replays: past the smallest limit of all
  recently joined consumers when that is smaller); or another consumer still holds unacked
  entries of the slot (draining guard). See key_shared.py. Which replays a step reads at all:
  :func:`key_shared_replayable` — only those the plan would hand out now, so entries waiting
  for a consumer without permits never hide the other consumers' entries.

Permits in every type follow consumers.py: an entry goes to a consumer with permits > 0 and
costs its message count, so a consumer never receives more than ``permits + batch - 1`` messages.
A plan neither loses nor duplicates entries: every entry is in exactly one assignment or in the
leftovers.

Example::

    plan = plan_dispatch(SubType.SHARED, [ConsumerSlot(c.key, permits[c.key].available,
                         c.priority_level) for c in shared.rotation()], candidates)
    for key, entries in plan.assignments: ...send, permits[key].consume(...), pending.add(...)
    shared.served(plan.last_served)
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from magnetar.broker.dispatch.chunks import ChunkAffinity, ChunkTag
from magnetar.broker.dispatch.consumers import ConsumerKey, SubType
from magnetar.broker.dispatch.sticky_key import sticky_key_hash
from magnetar.managed_ledger.position import Position


class Candidate(NamedTuple):
    """An entry that may be dispatched: position, message count (unacked), sticky key.

    A NamedTuple rather than a frozen dataclass: one is built for every entry a dispatch step
    reads, and a tuple is built faster (docs/benchmarks.md, "Per-message costs").
    """

    position: Position
    message_count: int = 1
    key: bytes | None = None

    @property
    def sticky_hash(self) -> int:
        return sticky_key_hash(self.key)


class ConsumerSlot(NamedTuple):
    """A consumer as the plan sees it: identity, permits now, priority level (a NamedTuple:
    every dispatch step builds one per consumer)."""

    key: ConsumerKey
    permits: int
    priority_level: int = 0


def _no_holders(_: int) -> Collection[ConsumerKey]:
    return ()


@dataclass(frozen=True, slots=True)
class KeySharedView:
    """What a Key_Shared plan needs from the subscription's state (read only)."""

    select: Callable[[int], ConsumerKey | None]
    recently_joined: Mapping[ConsumerKey, Position] = field(default_factory=dict)
    hash_holders: Callable[[int], Collection[ConsumerKey]] = _no_holders
    allow_out_of_order: bool = False


@dataclass(frozen=True, slots=True)
class DispatchPlan:
    """Entries per consumer (delivery order) and entries nobody could take now."""

    assignments: tuple[tuple[ConsumerKey, tuple[Candidate, ...]], ...]
    leftovers: tuple[Candidate, ...]
    last_served: ConsumerKey | None = None

    def for_consumer(self, key: ConsumerKey) -> tuple[Candidate, ...]:
        for k, entries in self.assignments:
            if k == key:
                return entries
        return ()


class _Assignment:
    def __init__(self, consumers: Sequence[ConsumerSlot]) -> None:
        self.permits = {c.key: c.permits for c in consumers}
        self.entries: dict[ConsumerKey, list[Candidate]] = {}
        self.leftovers: list[Candidate] = []
        self.last: ConsumerKey | None = None

    def give(self, key: ConsumerKey, entry: Candidate) -> None:
        given = self.entries.get(key)
        if given is None:
            given = self.entries[key] = []
        given.append(entry)
        self.permits[key] -= entry.message_count
        self.last = key

    def plan(self) -> DispatchPlan:
        assignments = tuple((k, tuple(v)) for k, v in self.entries.items())
        return DispatchPlan(assignments, tuple(self.leftovers), self.last)


def plan_dispatch(
    sub_type: SubType,
    consumers: Sequence[ConsumerSlot],
    entries: Sequence[Candidate],
    *,
    active: ConsumerKey | None = None,
    redelivery: Collection[Position] = frozenset(),
    blocked_hashes: Collection[int] = frozenset(),
    key_shared: KeySharedView | None = None,
    chunks: Mapping[Position, ChunkTag] | None = None,
    affinity: ChunkAffinity | None = None,
) -> DispatchPlan:
    """Decide who gets which of ``entries`` (see the module docstring)."""
    state = _Assignment(consumers)
    if sub_type in (SubType.EXCLUSIVE, SubType.FAILOVER):
        if sub_type == SubType.EXCLUSIVE and active is None and consumers:
            active = consumers[0].key
        _plan_single(state, active, entries)
    elif sub_type == SubType.SHARED:
        if chunks and affinity is not None:
            _plan_shared_chunks(state, consumers, entries, chunks, affinity)
        else:
            _plan_shared(state, consumers, entries)
    else:
        if key_shared is None:
            raise ValueError("a Key_Shared plan needs a KeySharedView")
        _plan_key_shared(state, entries, redelivery, blocked_hashes, key_shared)
    return state.plan()


def _plan_single(
    state: _Assignment, active: ConsumerKey | None, entries: Sequence[Candidate]
) -> None:
    for i, entry in enumerate(entries):
        if active is None or state.permits.get(active, 0) <= 0:
            state.leftovers.extend(entries[i:])
            return
        state.give(active, entry)


def _plan_shared(
    state: _Assignment, consumers: Sequence[ConsumerSlot], entries: Sequence[Candidate]
) -> None:
    order = list(consumers)
    n = len(order)
    permits = state.permits
    start = 0
    for i, entry in enumerate(entries):
        # The best (lowest) priority level with permits; within it, the first consumer in
        # rotation order from ``start`` (ties keep the earlier one: strict ``<``).
        chosen, level = -1, 0
        for d in range(n):
            j = start + d if start + d < n else start + d - n
            c = order[j]
            if permits[c.key] > 0 and (chosen < 0 or c.priority_level < level):
                chosen, level = j, c.priority_level
        if chosen < 0:
            state.leftovers.extend(entries[i:])
            return
        state.give(order[chosen].key, entry)
        start = (chosen + 1) % n


def _plan_shared_chunks(
    state: _Assignment,
    consumers: Sequence[ConsumerSlot],
    entries: Sequence[Candidate],
    chunks: Mapping[Position, ChunkTag],
    affinity: ChunkAffinity,
) -> None:
    """Shared with chunked messages among ``entries``: a chunk whose message has a holder goes
    to the holder or waits; anything else by rotation (one entry at a time, so the rotation
    and priority rules stay those of :func:`_plan_shared`)."""
    connected = {c.key for c in consumers}
    for entry in entries:
        tag = chunks.get(entry.position)
        holder = affinity.holder(tag) if tag is not None else None
        if tag is not None and holder is not None and holder in connected:
            if state.permits[holder] > 0:
                state.give(holder, entry)
                affinity.given(tag, holder)
            else:
                state.leftovers.append(entry)
            continue
        before = len(state.leftovers)
        _plan_shared(state, _rotated(consumers, state.last), [entry])
        if tag is not None and len(state.leftovers) == before and state.last is not None:
            affinity.given(tag, state.last)


def _rotated(consumers: Sequence[ConsumerSlot], last: ConsumerKey | None) -> list[ConsumerSlot]:
    """``consumers`` in rotation order starting after ``last``."""
    order = list(consumers)
    for i, c in enumerate(order):
        if c.key == last:
            return order[i + 1 :] + order[: i + 1]
    return order


def _plan_key_shared(
    state: _Assignment,
    entries: Sequence[Candidate],
    redelivery: Collection[Position],
    blocked_hashes: Collection[int],
    view: KeySharedView,
) -> None:
    stuck: set[int] = set()
    min_limit = min(view.recently_joined.values(), default=None)
    for entry in entries:
        slot = entry.sticky_hash
        consumer = view.select(slot)
        if slot in stuck or consumer is None or state.permits.get(consumer, 0) <= 0:
            ok = False
        elif view.allow_out_of_order:
            ok = True
        else:
            replay = entry.position in redelivery
            if not replay and slot in blocked_hashes:
                ok = False
            else:
                ok = _in_order(entry.position, slot, consumer, replay, view, min_limit)
        if ok and consumer is not None:
            state.give(consumer, entry)
        else:
            stuck.add(slot)
            state.leftovers.append(entry)


def _in_order(
    position: Position,
    slot: int,
    consumer: ConsumerKey,
    replay: bool,
    view: KeySharedView,
    min_limit: Position | None,
) -> bool:
    """The recently-joined and draining rules for an entry of ``slot`` bound for ``consumer``."""
    limit = view.recently_joined.get(consumer)
    if limit is not None:
        if replay and min_limit is not None and min_limit < limit:
            limit = min_limit
        if position >= limit:
            return False
    return all(holder == consumer for holder in view.hash_holders(slot))


def key_shared_replayable(
    view: KeySharedView, can_take: Callable[[ConsumerKey], bool]
) -> Callable[[Position, int | None], bool]:
    """Which queued replays a Key_Shared step should read: those the plan would hand out now.

    The step reads at most its budget of replays, oldest first. Without this filter, entries
    waiting for a consumer without permits (or held back by the ordering rules) fill the budget
    at the head of the queue, so the replays of every other consumer behind them, and its new
    reads (held back while its slot has replays), never go out. Pass the result as ``accept`` to
    :meth:`RedeliveryQueue.positions`. ``can_take(consumer)``: it has permits and is connected.
    Once it refuses a position of a slot it refuses every later one (the slot's consumer, its
    holders and its recently-joined limit do not change within a step), which ``positions``
    relies on to skip the rest of a refused slot.
    """
    min_limit = min(view.recently_joined.values(), default=None)

    def replayable(position: Position, slot: int | None) -> bool:
        if slot is None:
            return True
        consumer = view.select(slot)
        if consumer is None or not can_take(consumer):
            return False
        return view.allow_out_of_order or _in_order(position, slot, consumer, True, view, min_limit)

    return replayable
