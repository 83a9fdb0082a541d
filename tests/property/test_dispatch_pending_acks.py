"""PendingAcks against a dict model: individual, cumulative and batch-index acks, redelivery."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from magnetar.broker.dispatch import PendingAcks
from magnetar.broker.dispatch.pending_acks import full_mask
from magnetar.managed_ledger import Position

CONSUMERS = [(1, 1), (1, 2), (2, 1)]
positions = st.integers(0, 30).map(lambda e: Position(1, e))


class PendingAcksMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.pending = PendingAcks()
        # position -> (consumer, batch size, slot, unacked mask)
        self.model: dict[Position, tuple[tuple[int, int], int, int, int]] = {}

    @rule(
        consumer=st.sampled_from(CONSUMERS),
        pos=positions,
        size=st.integers(1, 70),
        slot=st.integers(0, 3),
    )
    def deliver(self, consumer: tuple[int, int], pos: Position, size: int, slot: int) -> None:
        self.pending.add(consumer, pos, size, slot)
        self.model[pos] = (consumer, size, slot, full_mask(size))

    @rule(pos=positions, bits=st.none() | st.integers(0, (1 << 70) - 1))
    def ack_individual(self, pos: Position, bits: int | None) -> None:
        out = self.pending.ack_individual(pos, bits)
        held = self.model.get(pos)
        if held is None:
            expected = (pos,) if bits is None or bits == 0 else ()
            assert out.acked == expected
            return
        consumer, size, slot, mask = held
        remaining = 0 if bits is None else mask & bits
        if remaining:
            self.model[pos] = (consumer, size, slot, remaining)
            assert out.acked == ()
            assert [r.unacked for r in out.partial] == [remaining]
        else:
            del self.model[pos]
            assert out.acked == (pos,)

    @rule(pos=positions)
    def ack_cumulative(self, pos: Position) -> None:
        out = self.pending.ack_cumulative(pos)
        expected = sorted(p for p in self.model if p <= pos)
        for p in expected:
            del self.model[p]
        assert list(out.acked) == expected

    @rule(consumer=st.sampled_from(CONSUMERS), which=st.none() | st.sets(positions, max_size=5))
    def redeliver(self, consumer: tuple[int, int], which: set[Position] | None) -> None:
        taken = self.pending.redeliver(consumer, which)
        expected = sorted(
            p
            for p, (c, *_) in self.model.items()
            if c == consumer and (which is None or p in which)
        )
        assert [r.position for r in taken] == expected
        for p in expected:
            assert taken[expected.index(p)].unacked == self.model[p][3]
            del self.model[p]

    @invariant()
    def agrees_with_model(self) -> None:
        assert len(self.pending) == len(self.model)
        for consumer in CONSUMERS:
            mine = {p: v for p, v in self.model.items() if v[0] == consumer}
            assert [r.position for r in self.pending.of(consumer)] == sorted(mine)
            assert self.pending.unacked_messages(consumer) == sum(
                v[3].bit_count() for v in mine.values()
            )
        for slot in range(4):
            assert self.pending.holders_of_hash(slot) == {
                c for c, _, s, _ in self.model.values() if s == slot
            }
        assert self.pending.oldest() == min(self.model, default=None)


TestPendingAcks = PendingAcksMachine.TestCase


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(CONSUMERS),
            st.lists(
                st.tuples(
                    positions,
                    st.integers(1, 70),
                    st.integers(0, 3),
                    st.none() | st.integers(0, (1 << 70) - 1),
                ),
                max_size=6,
            ),
        ),
        max_size=5,
    ),
    st.booleans(),
)
def test_a_run_records_what_one_add_an_entry_records(
    runs: list[tuple[tuple[int, int], list[tuple[Position, int, int, int | None]]]],
    key_shared: bool,
) -> None:
    """``add_run`` (one call per consumer and dispatch step) against ``add`` per entry, with
    positions pending elsewhere (or earlier in the run) moving over."""
    one, many = PendingAcks(), PendingAcks()
    for consumer, run in runs:
        for pos, size, slot, mask in run:
            one.add(consumer, pos, size, slot if key_shared else None, mask)
        many.add_run(
            consumer,
            [r[0] for r in run],
            [r[1] for r in run],
            [r[2] for r in run] if key_shared else None,
            [r[3] for r in run],
        )
    assert len(one) == len(many)
    for consumer in CONSUMERS:
        assert one.of(consumer) == many.of(consumer)
        assert one.unacked_messages(consumer) == many.unacked_messages(consumer)
    for slot in range(4):
        assert one.holders_of_hash(slot) == many.holders_of_hash(slot)
    acked = [*sorted({r[0] for _, run in runs for r in run})[::2], Position(9, 9)]
    for p in acked:
        one.discard(p)
    many.discard_run(acked)
    for consumer in CONSUMERS:
        assert one.of(consumer) == many.of(consumer)
        assert one.unacked_messages(consumer) == many.unacked_messages(consumer)
    for slot in range(4):
        assert one.holders_of_hash(slot) == many.holders_of_hash(slot)
    assert len(one) == len(many)
