"""Striping math and the ack-quorum coverage rule used by fencing."""

from __future__ import annotations

import itertools

from magnetar.ledger.distribution import covers_ack_quorums, write_set


def test_write_set_starts_at_entry_mod_ensemble_and_wraps() -> None:
    assert write_set(0, 3, 3) == (0, 1, 2)
    assert write_set(4, 3, 3) == (1, 2, 0)
    assert write_set(3, 5, 2) == (3, 4)
    assert write_set(4, 5, 2) == (4, 0)


def test_every_position_stores_wq_of_every_e_entries() -> None:
    for e, wq in [(3, 2), (5, 3), (4, 4)]:
        counts = [0] * e
        for entry in range(e * 10):
            for p in write_set(entry, e, wq):
                counts[p] += 1
        assert counts == [10 * wq] * e


def test_coverage_needs_e_minus_aq_plus_one_when_wq_equals_e() -> None:
    # E=3 Wq=3 Aq=2: any 2 fenced bookies suffice, 1 does not.
    for fenced in itertools.combinations(range(3), 2):
        assert covers_ack_quorums(fenced, 3, 3, 2)
    for single in range(3):
        assert not covers_ack_quorums([single], 3, 3, 2)


def test_coverage_with_striping_checks_each_write_set() -> None:
    # E=4 Wq=2 Aq=2: write sets {0,1},{1,2},{2,3},{3,0}: fencing 0 and 2 touches each of them.
    assert covers_ack_quorums([0, 2], 4, 2, 2)
    assert not covers_ack_quorums([0, 1], 4, 2, 2)  # {2,3} could still ack
    # Aq=1: every bookie must be fenced.
    assert not covers_ack_quorums([0, 1, 2], 4, 2, 1)
    assert covers_ack_quorums([0, 1, 2, 3], 4, 2, 1)
