"""plan_dispatch per subscription type, and Key_Shared order across joins and leaves."""

from __future__ import annotations

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
    plan_dispatch,
    sticky_key_hash,
)
from magnetar.managed_ledger import Position

A, B, C = (1, 1), (1, 2), (1, 3)


def e(entry: int, messages: int = 1, key: bytes | None = None) -> Candidate:
    return Candidate(Position(7, entry), messages, key)


def ids(entries: tuple[Candidate, ...]) -> list[int]:
    return [c.position.entry_id for c in entries]


def test_exclusive_and_failover_send_a_prefix_to_the_active_consumer() -> None:
    entries = [e(0), e(1, messages=5), e(2), e(3)]
    plan = plan_dispatch(SubType.EXCLUSIVE, [ConsumerSlot(A, 3)], entries)
    # 3 permits: entry 0 (1), entry 1 (batch of 5, allowed with 2 left), then at -3: stop.
    assert ids(plan.for_consumer(A)) == [0, 1]
    assert ids(plan.leftovers) == [2, 3]
    plan = plan_dispatch(
        SubType.FAILOVER, [ConsumerSlot(A, 100), ConsumerSlot(B, 100)], entries, active=B
    )
    assert ids(plan.for_consumer(B)) == [0, 1, 2, 3]
    assert plan.for_consumer(A) == ()
    plan = plan_dispatch(SubType.FAILOVER, [ConsumerSlot(A, 100)], entries, active=None)
    assert len(plan.leftovers) == 4


def test_shared_round_robin_skips_consumers_without_permits() -> None:
    slots = [ConsumerSlot(A, 2), ConsumerSlot(B, 0), ConsumerSlot(C, 5)]
    plan = plan_dispatch(SubType.SHARED, slots, [e(i) for i in range(6)])
    assert ids(plan.for_consumer(A)) == [0, 2]
    assert plan.for_consumer(B) == ()
    assert ids(plan.for_consumer(C)) == [1, 3, 4, 5]
    assert plan.leftovers == ()
    assert plan.last_served == C


def test_shared_serves_the_best_priority_level_first() -> None:
    slots = [ConsumerSlot(A, 10, priority_level=1), ConsumerSlot(B, 2, priority_level=0)]
    plan = plan_dispatch(SubType.SHARED, slots, [e(i) for i in range(4)])
    assert ids(plan.for_consumer(B)) == [0, 1]
    assert ids(plan.for_consumer(A)) == [2, 3]


def test_shared_stops_when_nobody_has_permits() -> None:
    plan = plan_dispatch(SubType.SHARED, [ConsumerSlot(A, 1)], [e(0, 3), e(1)])
    assert ids(plan.for_consumer(A)) == [0]
    assert ids(plan.leftovers) == [1]


def keys_for_two_consumers(sel: AutoSplitSelector) -> tuple[bytes, bytes]:
    """A key owned by A and one owned by B under ``sel``."""
    owned: dict[tuple[int, int], bytes] = {}
    for i in range(1000):
        key = f"key-{i}".encode()
        owner = sel.select(sticky_key_hash(key))
        assert owner is not None
        owned.setdefault(owner, key)
    return owned[A], owned[B]


def test_key_shared_same_key_same_consumer_while_membership_is_stable() -> None:
    sel = AutoSplitSelector()
    for cid in (1, 2, 3):
        sel.add(ConsumerInfo(cid, f"c{cid}", connection_id=1, key_shared=KeySharedMeta()))
    slots = [ConsumerSlot(k, 1000) for k in (A, B, C)]
    entries = [e(i, key=f"k{i % 17}".encode()) for i in range(200)]
    owner: dict[bytes | None, tuple[int, int]] = {}
    for _ in range(3):
        plan = plan_dispatch(
            SubType.KEY_SHARED, slots, entries, key_shared=KeySharedView(sel.select)
        )
        assert plan.leftovers == ()
        for consumer, got in plan.assignments:
            for c in got:
                assert owner.setdefault(c.key, consumer) == consumer


def test_key_shared_new_consumer_waits_for_earlier_messages_of_its_keys() -> None:
    sel = AutoSplitSelector()
    sel.add(ConsumerInfo(1, "a", connection_id=1, key_shared=KeySharedMeta()))
    pending, queue, recent = PendingAcks(), RedeliveryQueue(), RecentlyJoined()

    def dispatch(entries: list[Candidate]) -> dict[tuple[int, int], list[int]]:
        view = KeySharedView(sel.select, recent.limits(), pending.holders_of_hash)
        slots = [ConsumerSlot(k, 100) for k in (A, B) if sel.select(0) is not None]
        plan = plan_dispatch(
            SubType.KEY_SHARED,
            slots,
            entries,
            redelivery=set(queue.positions()),
            blocked_hashes=queue.hashes() - {c.sticky_hash for c in entries if c.position in queue},
            key_shared=view,
        )
        for consumer, got in plan.assignments:
            for c in got:
                queue.remove(c.position)
                pending.add(consumer, c.position, c.message_count, c.sticky_hash)
        for c in plan.leftovers:
            queue.add(c.position, c.sticky_hash)
        return {k: ids(v) for k, v in plan.assignments}

    # A alone receives k@0 and keeps it unacked.
    probe = AutoSplitSelector()
    probe.add(ConsumerInfo(1, "a", connection_id=1, key_shared=KeySharedMeta()))
    probe.add(ConsumerInfo(2, "b", connection_id=1, key_shared=KeySharedMeta()))
    _, key_b = keys_for_two_consumers(probe)  # a key that moves to B when B joins
    assert dispatch([e(0, key=key_b)]) == {A: [0]}

    # B joins at read position 1 while 0 is unacked: B is recently joined with limit 1.
    sel.add(ConsumerInfo(2, "b", connection_id=1, key_shared=KeySharedMeta()))
    recent.joined(B, read_position=Position(7, 1), oldest_unacked=pending.oldest())
    assert dispatch([e(1, key=key_b), e(2, key=key_b)]) == {}
    assert queue.positions() == [Position(7, 1), Position(7, 2)]

    # Still nothing for B while k@0 is unacked (replays too).
    assert dispatch([e(1, key=key_b), e(2, key=key_b)]) == {}
    # A acks k@0: B is released and gets k@1, k@2 in order.
    pending.ack_individual(Position(7, 0))
    recent.release(pending.oldest() or Position(7, 3))
    assert dispatch([e(1, key=key_b), e(2, key=key_b)]) == {B: [1, 2]}


def test_key_shared_leaving_consumer_entries_go_to_the_new_owner_first() -> None:
    sel = AutoSplitSelector()
    for cid in (1, 2):
        sel.add(ConsumerInfo(cid, f"c{cid}", connection_id=1, key_shared=KeySharedMeta()))
    key_a, _ = keys_for_two_consumers(sel)
    pending, queue = PendingAcks(), RedeliveryQueue()
    slot = sticky_key_hash(key_a)
    for i in (0, 1):
        pending.add(A, Position(7, i), 1, slot)
    # A leaves: its unacked entries go back for redelivery; new reads of the key wait for them.
    sel.remove(A)
    for rec in pending.remove_consumer(A):
        queue.add(rec.position, rec.sticky_hash)
    view = KeySharedView(sel.select, {}, pending.holders_of_hash)
    new_read = plan_dispatch(
        SubType.KEY_SHARED,
        [ConsumerSlot(B, 10)],
        [e(2, key=key_a)],
        blocked_hashes=queue.hashes(),
        key_shared=view,
    )
    assert ids(new_read.leftovers) == [2]
    replay = plan_dispatch(
        SubType.KEY_SHARED,
        [ConsumerSlot(B, 10)],
        [e(0, key=key_a), e(1, key=key_a)],
        redelivery=set(queue.positions()),
        key_shared=view,
    )
    assert ids(replay.for_consumer(B)) == [0, 1]


def test_key_shared_draining_guard_and_stuck_slots() -> None:
    sel = AutoSplitSelector()
    sel.add(ConsumerInfo(2, "b", connection_id=1, key_shared=KeySharedMeta()))
    # C still holds an entry of the slot: B must not get later entries of it.
    view = KeySharedView(sel.select, {}, lambda slot: {C})
    plan = plan_dispatch(
        SubType.KEY_SHARED, [ConsumerSlot(B, 10)], [e(5, key=b"k")], key_shared=view
    )
    assert ids(plan.leftovers) == [5]
    # Out-of-order delivery allowed: the guard is off.
    view = KeySharedView(sel.select, {}, lambda slot: {C}, allow_out_of_order=True)
    plan = plan_dispatch(
        SubType.KEY_SHARED, [ConsumerSlot(B, 10)], [e(5, key=b"k")], key_shared=view
    )
    assert ids(plan.for_consumer(B)) == [5]
    # Permits run out at a batch: later entries of the same slot do not overtake it.
    view = KeySharedView(sel.select)
    plan = plan_dispatch(
        SubType.KEY_SHARED,
        [ConsumerSlot(B, 1)],
        [e(0, key=b"k"), e(1, 3, key=b"k"), e(2, key=b"k")],
        key_shared=view,
    )
    assert ids(plan.for_consumer(B)) == [0]
    assert ids(plan.leftovers) == [1, 2]


def test_key_shared_recently_joined_consumer_gets_only_entries_before_its_limit() -> None:
    sel = AutoSplitSelector()
    sel.add(ConsumerInfo(2, "b", connection_id=1, key_shared=KeySharedMeta()))
    limits = {B: Position(7, 3)}
    view = KeySharedView(sel.select, limits)
    entries = [e(1, key=b"k"), e(2, key=b"x"), e(3, key=b"y"), e(4, key=b"k")]
    plan = plan_dispatch(
        SubType.KEY_SHARED,
        [ConsumerSlot(B, 10)],
        entries,
        redelivery={Position(7, 1), Position(7, 2)},
        key_shared=view,
    )
    assert ids(plan.for_consumer(B)) == [1, 2]
    assert ids(plan.leftovers) == [3, 4]
    # While replaying, the smallest limit of all recently joined consumers applies.
    view = KeySharedView(sel.select, {B: Position(7, 3), C: Position(7, 2)})
    plan = plan_dispatch(
        SubType.KEY_SHARED,
        [ConsumerSlot(B, 10)],
        entries[:2],
        redelivery={Position(7, 1), Position(7, 2)},
        key_shared=view,
    )
    assert ids(plan.for_consumer(B)) == [1]
    # Released (no limit): everything goes.
    plan = plan_dispatch(
        SubType.KEY_SHARED, [ConsumerSlot(B, 10)], entries, key_shared=KeySharedView(sel.select)
    )
    assert ids(plan.for_consumer(B)) == [1, 2, 3, 4]


def test_key_shared_a_held_back_entry_holds_back_later_entries_of_its_slot() -> None:
    sel = AutoSplitSelector()
    sel.add(ConsumerInfo(2, "b", connection_id=1, key_shared=KeySharedMeta()))
    # The replay of k@1 is held back (C's smaller limit applies to replays); k@2 on its own would
    # pass B's limit, but must not overtake k@1.
    view = KeySharedView(sel.select, {B: Position(7, 3), C: Position(7, 1)})
    plan = plan_dispatch(
        SubType.KEY_SHARED,
        [ConsumerSlot(B, 10)],
        [e(1, key=b"k"), e(2, key=b"k")],
        redelivery={Position(7, 1)},
        key_shared=view,
    )
    assert ids(plan.leftovers) == [1, 2]
