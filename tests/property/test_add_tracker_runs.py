"""Hypothesis: the write handle's run tracker confirms exactly what a per-entry model does.

Runs of random sizes go to an ensemble of random E/Wq/Aq; the bookies answer in random
interleavings, each in order (a prefix of what it was sent, possibly cut by a failure after
which its acks of that run stop). After every answer the confirmed ranges must be contiguous
and in id order, and the last-add-confirmed must equal the model's: the highest id such that
every entry up to it has Aq acks from its write set."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from magnetar.ids import BookieId
from magnetar.ledger.bookie_client import AddRequest
from magnetar.ledger.distribution import write_set
from magnetar.ledger.pending_adds import AddTracker, PendingRun


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[int, int, int, list[int], list[tuple[int, int, int]]]:
    e = draw(st.integers(1, 4))
    wq = draw(st.integers(1, e))
    aq = draw(st.integers(1, wq))
    sizes = draw(st.lists(st.integers(1, 6), min_size=1, max_size=6))
    # (run index, bookie index, how many more of its adds of the run the bookie answers OK)
    answers = draw(
        st.lists(
            st.tuples(st.integers(0, len(sizes) - 1), st.integers(0, e - 1), st.integers(1, 6)),
            max_size=60,
        )
    )
    return e, wq, aq, sizes, answers


@settings(max_examples=300, deadline=None)
@given(scenarios())
def test_runs_confirm_exactly_like_entries(
    scenario: tuple[int, int, int, list[int], list[tuple[int, int, int]]],
) -> None:
    e, wq, aq, sizes, answers = scenario
    ensemble = tuple(BookieId(f"b{i}") for i in range(e))
    tracker = AddTracker(ensemble, wq, aq)
    runs: list[PendingRun] = []
    sent: dict[tuple[int, BookieId], list[int]] = {}  # what each bookie got of each run
    for index, size in enumerate(sizes):
        run = tracker.new_run([b"x"] * size, size)
        run.requests = [AddRequest(1, run.first + i, -1, b"x", 0, b"") for i in range(size)]
        for bookie, adds in tracker.sends(run, run.first):
            sent[(index, bookie)] = [a.entry_id for a in adds]
        runs.append(run)
    total = sum(sizes)
    for entry in range(total):  # every entry went to exactly its write set
        holders = {b for (_, b), ids in sent.items() if entry in ids}
        assert holders == {ensemble[p] for p in write_set(entry, e, wq)}

    answered: dict[tuple[int, BookieId], int] = {}  # how many of its adds each bookie acked
    acked: set[tuple[int, BookieId]] = set()  # (entry, bookie), the model
    lac = -1
    for run_index, bookie_index, more in answers:
        bookie = ensemble[bookie_index]
        ids = sent.get((run_index, bookie), [])
        done = answered.get((run_index, bookie), 0)
        if done >= len(ids):
            continue
        upto = min(len(ids), done + more)
        answered[(run_index, bookie)] = upto
        acked.update((entry, bookie) for entry in ids[done:upto])
        confirmed = tracker.on_acks(runs[run_index], bookie, ids[upto - 1])
        for _run, low, high, nbytes in confirmed:
            assert low == lac + 1
            assert high >= low
            assert nbytes == high - low + 1
            lac = high
        model = -1
        while model + 1 < total:
            following = model + 1
            holders = [ensemble[p] for p in write_set(following, e, wq)]
            if sum((following, b) in acked for b in holders) < aq:
                break
            model = following
        assert lac == model == tracker.last_add_confirmed
        assert tracker.pending_count == total - 1 - lac
