"""Key_Shared model checks of the dispatch cores, driven the way the subscription's task drives
them (AutoSplitSelector, RecentlyJoined, PendingAcks, RedeliveryQueue, plan_dispatch).

* :class:`KeySharedMachine` — through any sequence of produce / join / leave / dispatch / ack,
  every message of a key is delivered in order, to exactly one consumer at a time, and
  everything is delivered once consumers keep acking (no stall). Checked at each delivery of
  message m of key K to consumer C: every earlier message of K is acked or held by C, and no
  later message of K is held by anyone.
* :class:`KeySharedPermitsMachine` — join / leave sequences, arbitrary key hashes and FLOWs,
  with read steps bounded like the subscription's (a budget of entries, replays first, chosen
  with ``key_shared_replayable``): every hash maps to exactly one connected consumer, and every
  message is delivered once its key's consumer has permits — a consumer without permits holds
  back only its own keys (and those it still holds unacked), never the others'.
"""

from __future__ import annotations

import itertools

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from magnetar.broker.dispatch import (
    AutoSplitSelector,
    Candidate,
    ConsumerInfo,
    ConsumerSlot,
    KeySharedMeta,
    KeySharedView,
    PendingAcks,
    RecentlyJoined,
    RedeliveryQueue,
    SubType,
    key_shared_replayable,
    plan_dispatch,
)
from magnetar.managed_ledger import Position

KEYS = [b"k0", b"k1", b"k2", b"k3", b"k4", None]
LEDGER = 5


def pos(i: int) -> Position:
    return Position(LEDGER, i)


class KeySharedMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.selector = AutoSplitSelector()
        self.recent = RecentlyJoined()
        self.pending = PendingAcks()
        self.queue = RedeliveryQueue()
        self.log: list[bytes | None] = []  # key of each produced entry
        self.read = 0  # next entry index the cursor reads
        self.acked: set[int] = set()
        self.consumers: list[tuple[int, int]] = []
        self.next_id = 0

    # -- the subscription task, as the data plane will write it ----------------------------
    def oldest_unacked(self) -> Position | None:
        return min(
            (p for p in (self.pending.oldest(), *self.queue.positions(1)) if p is not None),
            default=None,
        )

    def candidate(self, i: int) -> Candidate:
        return Candidate(pos(i), 1, self.log[i])

    def dispatch_round(self, permits: list[int], new_reads: int, replays_max: int | None) -> None:
        # The task may replay only the oldest few queued entries in one round.
        replays = [self.candidate(p.entry_id) for p in self.queue.positions(replays_max)]
        fresh = [
            self.candidate(i) for i in range(self.read, min(len(self.log), self.read + new_reads))
        ]
        self.read += len(fresh)
        view = KeySharedView(
            self.selector.select, self.recent.limits(), self.pending.holders_of_hash
        )
        slots = [ConsumerSlot(k, permits[i % len(permits)]) for i, k in enumerate(self.consumers)]
        plan = plan_dispatch(
            SubType.KEY_SHARED,
            slots,
            replays + fresh,
            redelivery=set(self.queue.positions()),
            blocked_hashes=self.queue.hashes(),
            key_shared=view,
        )
        deliveries = sorted(
            ((c, key) for key, got in plan.assignments for c in got), key=lambda d: d[0].position
        )
        for c, consumer in deliveries:
            self.check_delivery(c, consumer)
            self.queue.remove(c.position)
            self.pending.add(consumer, c.position, c.message_count, c.sticky_hash)
        for c in plan.leftovers:
            self.queue.add(c.position, c.sticky_hash)

    def check_delivery(self, c: Candidate, consumer: tuple[int, int]) -> None:
        m = c.position.entry_id
        for q in range(self.read):
            if self.log[q] != c.key or q == m:
                continue
            holder = self.pending.get(pos(q))
            if q < m:
                assert q in self.acked or (holder is not None and holder.consumer == consumer), (
                    f"entry {m} of key {c.key!r} went to {consumer} before entry {q} was acked "
                    f"(held by {holder.consumer if holder else 'nobody, not acked'})"
                )
            else:
                assert holder is None, f"entry {m} of key {c.key!r} went out after entry {q}"

    def ack(self, positions: list[Position]) -> None:
        for p in positions:
            self.pending.ack_individual(p)
            self.acked.add(p.entry_id)
        self.recent.release(self.oldest_unacked())

    # -- rules -------------------------------------------------------------------------------
    @rule(keys=st.lists(st.sampled_from(KEYS), min_size=1, max_size=6))
    def produce(self, keys: list[bytes | None]) -> None:
        self.log.extend(keys)

    @precondition(lambda self: len(self.consumers) < 5)
    @rule()
    def join(self) -> None:
        self.next_id += 1
        info = ConsumerInfo(self.next_id, f"c{self.next_id}", key_shared=KeySharedMeta())
        self.selector.add(info)
        self.recent.joined(info.key, pos(self.read), self.oldest_unacked())
        self.consumers.append(info.key)

    @precondition(lambda self: bool(self.consumers))
    @rule(data=st.data())
    def leave(self, data: st.DataObject) -> None:
        key = data.draw(st.sampled_from(self.consumers))
        self.consumers.remove(key)
        self.selector.remove(key)
        self.recent.left(key)
        for record in self.pending.remove_consumer(key):
            self.queue.add(record.position, record.sticky_hash)
        self.recent.release(self.oldest_unacked())

    @precondition(lambda self: bool(self.consumers))
    @rule(
        permits=st.lists(st.integers(0, 4), min_size=1, max_size=5),
        new_reads=st.integers(0, 6),
        replays_max=st.none() | st.integers(0, 3),
    )
    def dispatch(self, permits: list[int], new_reads: int, replays_max: int | None) -> None:
        self.dispatch_round(permits, new_reads, replays_max)

    @rule(data=st.data())
    def ack_some(self, data: st.DataObject) -> None:
        held = [r.position for c in self.consumers for r in self.pending.of(c)]
        if held:
            self.ack(data.draw(st.lists(st.sampled_from(held), max_size=4, unique=True)))

    # -- invariants --------------------------------------------------------------------------
    @invariant()
    def each_key_held_by_one_consumer(self) -> None:
        holders: dict[bytes | None, set[tuple[int, int]]] = {}
        for c in self.consumers:
            for r in self.pending.of(c):
                holders.setdefault(self.log[r.position.entry_id], set()).add(c)
        assert all(len(h) == 1 for h in holders.values()), holders

    @invariant()
    def every_read_entry_is_acked_pending_or_queued(self) -> None:
        for i in range(self.read):
            states = [i in self.acked, pos(i) in self.pending, pos(i) in self.queue]
            assert states.count(True) == 1, (i, states)

    def teardown(self) -> None:
        # Liveness: with a consumer that acks everything, every entry gets delivered.
        if not self.consumers:
            self.join()
        for _ in range(len(self.log) + 3):
            self.dispatch_round([1000], new_reads=len(self.log), replays_max=None)
            self.ack([r.position for c in self.consumers for r in self.pending.of(c)])
        assert self.acked == set(range(len(self.log))), "Key_Shared stalled"


TestKeyShared = KeySharedMachine.TestCase


ConsumerKey = tuple[int, int]
READ_BUDGET = 4  # the subscription's MAX_READ_ENTRIES, small so replays compete for it
RANGE_END = 65535


class KeySharedPermitsMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.selector = AutoSplitSelector()
        self.recent = RecentlyJoined()
        self.pending = PendingAcks()
        self.queue = RedeliveryQueue()
        self.permits: dict[ConsumerKey, int] = {}  # the connected consumers
        self.keys: list[bytes] = []  # key of each produced entry
        self.read = 0
        self.acked: set[int] = set()
        self.next_id = 0

    def oldest_unacked(self) -> Position | None:
        options = [pos(self.read), *self.queue.positions(1)]
        if (oldest := self.pending.oldest()) is not None:
            options.append(oldest)
        return min(options)

    def step(self) -> int:
        """One read step of the subscription's task; the number of entries sent."""
        if not any(p > 0 for p in self.permits.values()):
            return 0
        budget = max(1, min(READ_BUDGET, sum(p for p in self.permits.values() if p > 0)))
        view = KeySharedView(
            self.selector.select, self.recent.limits(), self.pending.holders_of_hash
        )
        ready = key_shared_replayable(view, lambda k: self.permits[k] > 0)
        replays = [
            Candidate(p, 1, self.keys[p.entry_id]) for p in self.queue.positions(budget, ready)
        ]
        fresh_end = min(len(self.keys), self.read + budget - len(replays))
        fresh = [Candidate(pos(i), 1, self.keys[i]) for i in range(self.read, fresh_end)]
        self.read = fresh_end
        plan = plan_dispatch(
            SubType.KEY_SHARED,
            [ConsumerSlot(k, p) for k, p in self.permits.items()],
            replays + fresh,
            redelivery={c.position for c in replays},
            blocked_hashes=self.queue.hashes(),
            key_shared=view,
        )
        sent = 0
        for consumer, got in plan.assignments:
            for c in got:
                self.queue.remove(c.position)
                self.pending.add(consumer, c.position, 1, c.sticky_hash)
                self.permits[consumer] -= 1
                sent += 1
        for c in plan.leftovers:
            self.queue.add(c.position, c.sticky_hash)
        return sent

    def ack(self, positions: list[Position]) -> None:
        for p in positions:
            self.pending.ack_individual(p)
            self.acked.add(p.entry_id)
        self.recent.release(self.oldest_unacked())

    # -- rules -------------------------------------------------------------------------------
    @rule(keys=st.lists(st.binary(min_size=1, max_size=3), min_size=1, max_size=8))
    def produce(self, keys: list[bytes]) -> None:
        self.keys.extend(keys)

    @precondition(lambda self: len(self.permits) < 6)
    @rule()
    def join(self) -> None:
        self.next_id += 1
        info = ConsumerInfo(self.next_id, f"c{self.next_id}", key_shared=KeySharedMeta())
        self.selector.add(info)
        self.recent.joined(info.key, pos(self.read), self.oldest_unacked())
        self.permits[info.key] = 0

    @precondition(lambda self: bool(self.permits))
    @rule(data=st.data())
    def leave(self, data: st.DataObject) -> None:
        key = data.draw(st.sampled_from(sorted(self.permits)))
        del self.permits[key]
        self.selector.remove(key)
        self.recent.left(key)
        for record in self.pending.remove_consumer(key):
            self.queue.add(record.position, record.sticky_hash)
        self.recent.release(self.oldest_unacked())

    @precondition(lambda self: bool(self.permits))
    @rule(data=st.data(), n=st.integers(1, 10))
    def flow(self, data: st.DataObject, n: int) -> None:
        self.permits[data.draw(st.sampled_from(sorted(self.permits)))] += n

    @rule(steps=st.integers(1, 4))
    def dispatch(self, steps: int) -> None:
        for _ in range(steps):
            self.step()

    @rule(data=st.data())
    def ack_some(self, data: st.DataObject) -> None:
        held = sorted(r.position for c in self.permits for r in self.pending.of(c))
        if held:
            self.ack(data.draw(st.lists(st.sampled_from(held), max_size=4, unique=True)))

    @precondition(lambda self: bool(self.permits))
    @rule(slots=st.lists(st.integers(0, RANGE_END), min_size=1, max_size=8))
    def every_hash_maps_to_one_connected_consumer(self, slots: list[int]) -> None:
        ranges = self.selector.ranges()
        for slot in slots:
            owner = self.selector.select(slot)
            assert owner in self.permits, f"slot {slot} -> {owner}, not connected"
            holders = [k for k, rs in ranges.items() if any(slot in r for r in rs)]
            assert holders == [owner], f"slot {slot}: select -> {owner}, ranges -> {holders}"

    # -- invariants --------------------------------------------------------------------------
    @invariant()
    def ranges_partition_the_hash_space_among_connected_consumers(self) -> None:
        ranges = self.selector.ranges()
        assert set(ranges) == set(self.permits)
        spans = sorted((r.start, r.end) for rs in ranges.values() for r in rs)
        if self.permits:
            assert spans[0][0] == 0, spans
            assert spans[-1][1] == RANGE_END, spans
            assert all(a[1] + 1 == b[0] for a, b in itertools.pairwise(spans)), spans

    def teardown(self) -> None:
        # Liveness: the consumers with permits now keep getting permits and ack everything;
        # the others never get a permit again and never ack.
        stalled = {k for k, p in self.permits.items() if p <= 0}
        active = set(self.permits) - stalled
        if not active:
            return
        for _ in range(2 * len(self.keys) + 4):
            for k in active:
                self.permits[k] = 1000
            sent = self.step()
            self.ack([r.position for c in active for r in self.pending.of(c)])
            if not sent and self.read == len(self.keys) and not self.queue:
                break
        held_by_stalled = {r.sticky_hash for c in stalled for r in self.pending.of(c)}
        limits = self.recent.limits()
        floor = min(limits.values(), default=None)
        for i, key in enumerate(self.keys):
            if i in self.acked or any(pos(i) in {r.position for r in self.pending.of(c)}
                                      for c in stalled):  # fmt: skip
                continue
            c = Candidate(pos(i), 1, key)
            owner = self.selector.select(c.sticky_hash)
            excused = (
                owner in stalled
                or c.sticky_hash in held_by_stalled
                or (owner in limits and floor is not None and pos(i) >= floor)
            )
            assert excused, (
                f"entry {i} (slot {c.sticky_hash}) never reached {owner}, which has permits"
            )


TestKeySharedPermits = KeySharedPermitsMachine.TestCase
TestKeySharedPermits.settings = settings(max_examples=150, stateful_step_count=40)
