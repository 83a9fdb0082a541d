"""The write handle's sans-I/O core: ids, runs, quorum, in-order confirmation, ensemble change."""

from __future__ import annotations

from magnetar.ids import BookieId
from magnetar.ledger.bookie_client import AddRequest
from magnetar.ledger.pending_adds import AddTracker, Confirmed, PendingRun

A, B, C, D = (BookieId(x) for x in "abcd")


def _run(tracker: AddTracker, *payloads: bytes) -> PendingRun:
    """A run as the write handle starts it: requests built, sent to every bookie at once."""
    run = tracker.new_run(list(payloads), sum(len(p) for p in payloads))
    run.requests = [
        AddRequest(1, run.first + i, run.last_add_confirmed, p, 0, b"k")
        for i, p in enumerate(payloads)
    ]
    return run


def _sent(tracker: AddTracker, run: PendingRun) -> dict[BookieId, list[int]]:
    return {b: [r.entry_id for r in reqs] for b, reqs in tracker.sends(run, run.first)}


def _ranges(confirmed: list[Confirmed]) -> list[tuple[int, int]]:
    return [(low, high) for _run, low, high, _size in confirmed]


def test_ids_are_dense_in_call_order_and_each_bookie_gets_its_stripe_of_a_run() -> None:
    tracker = AddTracker((A, B, C), write_quorum=2, ack_quorum=2)
    first = _run(tracker, b"x", b"x", b"x", b"x")
    second = _run(tracker, b"y")
    assert (first.first, first.last, second.first, second.last) == (0, 3, 4, 4)
    assert tracker.targets(0) == (A, B)
    assert tracker.targets(2) == (C, A)
    assert _sent(tracker, first) == {A: [0, 2, 3], B: [0, 1, 3], C: [1, 2]}
    assert _sent(tracker, first) == {}  # everything is marked sent
    assert tracker.pending_count == 5


def test_a_run_confirms_whole_at_ack_quorum_not_before() -> None:
    tracker = AddTracker((A, B, C), write_quorum=3, ack_quorum=2)
    run = _run(tracker, b"p", b"qq", b"r")
    _sent(tracker, run)
    assert tracker.on_acks(run, A, 2) == []
    assert tracker.on_acks(run, A, 2) == []  # a duplicate answer does not count twice
    confirmed = tracker.on_acks(run, C, 2)
    assert _ranges(confirmed) == [(0, 2)]
    assert confirmed[0][3] == 4  # the range's payload bytes
    assert tracker.last_add_confirmed == 2
    assert tracker.length == 4
    assert tracker.pending_count == 0
    assert tracker.pending_bytes == 0
    assert not run.pending


def test_later_run_waits_for_earlier_ones() -> None:
    tracker = AddTracker((A, B, C), write_quorum=3, ack_quorum=2)
    first = _run(tracker, b"p")
    second = _run(tracker, b"p", b"p")
    _sent(tracker, first)
    _sent(tracker, second)
    assert tracker.on_acks(second, A, 2) == []
    assert tracker.on_acks(second, B, 2) == []
    assert tracker.last_add_confirmed == -1
    tracker.on_acks(first, A, 0)
    assert _ranges(tracker.on_acks(first, C, 0)) == [(0, 0), (1, 2)]
    assert tracker.last_add_confirmed == 2


def test_a_run_answered_partly_confirms_the_acked_prefix_then_the_rest() -> None:
    tracker = AddTracker((A, B), write_quorum=2, ack_quorum=2)
    run = _run(tracker, *[b"e"] * 5)
    _sent(tracker, run)
    tracker.on_acks(run, B, 4)
    assert _ranges(tracker.on_acks(run, A, 2)) == [(0, 2)]  # A has answered 0..2 so far
    assert run.pending
    assert run.confirmed == 2
    assert tracker.pending_count == 2
    assert _ranges(tracker.on_acks(run, A, 4)) == [(3, 4)]
    assert tracker.last_add_confirmed == 4


def test_striped_run_confirms_only_entries_whose_write_sets_acked() -> None:
    tracker = AddTracker((A, B, C), write_quorum=2, ack_quorum=2)
    run = _run(tracker, b"a", b"b", b"c", b"d")  # write sets AB, BC, CA, AB
    _sent(tracker, run)
    tracker.on_acks(run, A, 3)
    assert _ranges(tracker.on_acks(run, B, 3)) == [(0, 0)]  # entry 1 needs C
    assert _ranges(tracker.on_acks(run, C, 2)) == [(1, 3)]


def test_answer_from_a_bookie_the_run_was_not_sent_to_is_ignored() -> None:
    tracker = AddTracker((A, B, C), write_quorum=3, ack_quorum=2)
    run = _run(tracker, b"p")  # not sent yet
    assert tracker.on_acks(run, A, 0) == []
    assert tracker.on_acks(run, B, 0) == []
    assert tracker.last_add_confirmed == -1


def test_one_bookie_failing_mid_run_keeps_earlier_acks_and_resends_the_rest() -> None:
    tracker = AddTracker((A, B, C), write_quorum=3, ack_quorum=3)
    run = _run(tracker, *[b"e"] * 5)
    _sent(tracker, run)
    tracker.on_acks(run, A, 4)
    tracker.on_acks(run, C, 4)
    # B journalled 0..1, then failed at 2: entries 0..1 confirm, 2..4 wait for a replacement.
    assert _ranges(tracker.on_acks(run, B, 1)) == [(0, 1)]
    tracker.forget(run, B, 2)
    tracker.begin_change()
    assert tracker.unsent() == []  # frozen while the change runs
    assert tracker.apply_ensemble((A, D, C)) == []
    resend = [(b, [r.entry_id for r in reqs]) for _run, b, reqs in tracker.unsent()]
    assert resend == [(D, [2, 3, 4])]  # only the replacement, only the unconfirmed part
    assert _ranges(tracker.on_acks(run, D, 4)) == [(2, 4)]
    assert tracker.last_add_confirmed == 4


def test_ensemble_change_freezes_confirmation_and_resends_to_replacement() -> None:
    tracker = AddTracker((A, B, C), write_quorum=3, ack_quorum=3)
    first = _run(tracker, b"p")
    second = _run(tracker, b"p")
    _sent(tracker, first)
    _sent(tracker, second)
    tracker.on_acks(first, A, 0)
    tracker.on_acks(first, B, 0)
    tracker.on_acks(second, A, 1)
    tracker.on_acks(second, C, 1)
    tracker.begin_change()  # B failed
    assert tracker.on_acks(second, B, 1) == []  # quorum reached, but frozen
    third = _run(tracker, b"q")  # appended during the change: not sent yet
    assert tracker.apply_ensemble((A, D, C)) == []  # B's acks no longer count
    resend = sorted((r.entry_id, b) for _run, b, reqs in tracker.unsent() for r in reqs)
    assert resend == [(0, D), (1, D), (2, A), (2, C), (2, D)]
    tracker.on_acks(first, C, 0)
    assert _ranges(tracker.on_acks(first, D, 0)) == [(0, 0)]
    assert _ranges(tracker.on_acks(second, D, 1)) == [(1, 1)]
    assert tracker.last_add_confirmed == 1
    assert third.pending


def test_drain_empties_everything() -> None:
    tracker = AddTracker((A, B, C), write_quorum=3, ack_quorum=2, last_add_confirmed=9)
    _run(tracker, b"abc", b"d")
    assert tracker.pending_bytes == 4
    assert [(r.first, r.last, r.confirmed) for r in tracker.drain()] == [(10, 11, 9)]
    assert tracker.pending_count == 0
    assert tracker.pending_bytes == 0


def test_forget_makes_the_rest_of_the_run_unsent_to_that_bookie_again() -> None:
    tracker = AddTracker((A, B, C), write_quorum=3, ack_quorum=2)
    run = _run(tracker, b"p", b"q")
    _sent(tracker, run)
    tracker.on_acks(run, B, 1)
    assert tracker.unsent() == []
    tracker.forget(run, B, 1)
    assert [(b, [r.entry_id for r in reqs]) for _r, b, reqs in tracker.unsent()] == [(B, [1])]
    tracker.on_acks(run, A, 1)
    assert tracker.last_add_confirmed == 0  # B's ack of entry 1 was forgotten
    assert _ranges(tracker.on_acks(run, B, 1)) == [(1, 1)]
