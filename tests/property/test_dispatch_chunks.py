"""Shared dispatch with chunked messages (``plan_dispatch`` with a ChunkAffinity): over any
interleaving of chunked and whole messages and any permits, every chunk of a message goes to
the consumer that got its first chunk, in order, and nothing is lost or duplicated."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from magnetar.broker.dispatch import ChunkAffinity, ChunkTag, ConsumerKey, SubType, plan_dispatch
from magnetar.broker.dispatch.dispatcher import Candidate, ConsumerSlot
from magnetar.ids import EntryId, LedgerId
from magnetar.managed_ledger import Position


@st.composite
def streams(draw: st.DrawFn) -> list[ChunkTag | None]:
    """Entries in log order: interleaved chunk chains of several messages, and whole messages."""
    sizes = draw(st.lists(st.integers(min_value=0, max_value=4), min_size=1, max_size=6))
    chains = [
        [ChunkTag(("p", f"m{i}"), c, c == n - 1) for c in range(n)]
        for i, n in enumerate(sizes)
        if n > 1
    ]
    singles = sum(1 for n in sizes if n <= 1)
    out: list[ChunkTag | None] = [None] * singles
    for chain in chains:
        for tag in chain:  # keep each chain's order, interleave chains at random
            at = draw(st.integers(min_value=0, max_value=len(out)))
            later = [i for i, t in enumerate(out) if t is not None and t.message == tag.message]
            out.insert(max([at, *(i + 1 for i in later)]), tag)
    return out


@given(
    streams(), st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=3), st.data()
)
@settings(max_examples=200)
def test_chunks_of_a_message_stay_on_one_consumer(
    tags: list[ChunkTag | None], permits: list[int], data: st.DataObject
) -> None:
    entries = [Candidate(Position(LedgerId(1), EntryId(i))) for i in range(len(tags))]
    chunks = {e.position: t for e, t in zip(entries, tags, strict=True) if t is not None}
    affinity = ChunkAffinity()
    receiver: dict[tuple[str, str], ConsumerKey] = {}
    delivered: list[Position] = []
    pending = list(entries)
    for _ in range(40):  # steps; each refills some permits, leftovers are replayed first
        if not pending:
            break
        # keys as the broker makes them, (connection, consumer id): the compiled planner checks
        slots = [
            ConsumerSlot((0, k), data.draw(st.integers(0, 3)) + p) for k, p in enumerate(permits)
        ]
        plan = plan_dispatch(SubType.SHARED, slots, pending, chunks=chunks, affinity=affinity)
        for key, given_entries in plan.assignments:
            for entry in given_entries:
                delivered.append(entry.position)
                tag = chunks.get(entry.position)
                if tag is not None:
                    assert receiver.setdefault(tag.message, key) == key, "a message split"
        pending = list(plan.leftovers)
    assert len(delivered) == len(set(delivered))
    assert set(delivered) | {e.position for e in pending} == {e.position for e in entries}
    for message in {t.message for t in chunks.values()}:
        order = [p for p in delivered if chunks.get(p) is not None and chunks[p].message == message]
        assert order == sorted(order), "chunks out of order"
