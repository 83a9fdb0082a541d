"""Recovery's pure decisions: when fencing is enough, where to start, is an entry there."""

from __future__ import annotations

from magnetar.ledger.recovery import EntryOutcome, decide_entry, fence_complete, recovery_start


def test_fence_needs_coverage_of_every_ack_quorum() -> None:
    assert fence_complete([0, 1], 3, 3, 2)
    assert not fence_complete([2], 3, 3, 2)
    assert fence_complete([0], 3, 3, 3)  # Aq = Wq = E: one fenced bookie blocks every quorum
    assert not fence_complete([], 3, 3, 1)


def test_recovery_starts_after_highest_lac_and_not_before_last_segment() -> None:
    assert recovery_start([3, 7, 5], 0) == 7
    assert recovery_start([], 0) == -1
    assert recovery_start([2, -1], 10) == 9  # entries 0..9 were confirmed before the change


def test_found_entry_is_present_even_if_others_lack_it() -> None:
    assert decide_entry(True, 2, 3, 2) is EntryOutcome.PRESENT


def test_missing_needs_more_than_wq_minus_aq_answers() -> None:
    # Wq=3 Aq=2: 2 "no such entry" answers mean at most one bookie could have it: never acked.
    assert decide_entry(False, 2, 3, 2) is EntryOutcome.MISSING
    assert decide_entry(False, 1, 3, 2) is EntryOutcome.UNDECIDABLE
    # Wq=3 Aq=3: a single bookie without it proves it was never acked by all three.
    assert decide_entry(False, 1, 3, 3) is EntryOutcome.MISSING
    # Wq=3 Aq=1: all three must lack it.
    assert decide_entry(False, 2, 3, 1) is EntryOutcome.UNDECIDABLE
    assert decide_entry(False, 3, 3, 1) is EntryOutcome.MISSING
