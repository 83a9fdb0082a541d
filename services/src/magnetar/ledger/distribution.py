"""Striping of entries over an ensemble (BookKeeper's ``RoundRobinDistributionSchedule``), pure.

Entry ``e`` is written to the ``Wq`` positions ``e mod E, e+1 mod E, ... e+Wq-1 mod E`` of the
ensemble holding it. Quorum arithmetic used by recovery lives here too: whether a set of
responding positions covers every write set (no ack quorum can form without one of them).
"""

from __future__ import annotations

from collections.abc import Collection


def write_set(entry_id: int, ensemble_size: int, write_quorum: int) -> tuple[int, ...]:
    """Ensemble positions that store ``entry_id``, starting at ``entry_id mod E``."""
    start = entry_id % ensemble_size
    return tuple((start + i) % ensemble_size for i in range(write_quorum))


def covers_ack_quorums(
    responded: Collection[int], ensemble_size: int, write_quorum: int, ack_quorum: int
) -> bool:
    """True when every write set has fewer than Aq positions outside ``responded``.

    Then no entry can still gather Aq acks from bookies that have not responded (e.g. been
    fenced): BookKeeper's ack-quorum coverage rule for fencing and recovery reads.
    """
    answered = set(responded)
    for start in range(ensemble_size):
        silent = sum(1 for p in write_set(start, ensemble_size, write_quorum) if p not in answered)
        if silent >= ack_quorum:
            return False
    return True
