"""Which ledgers are under-replicated: the check BookKeeper's auditor makes on its first pass.

A ledger is under-replicated when one of its ensembles (any segment, not only the current
one) names a bookie that is not available: the entries that bookie held have fewer copies
than the write quorum promised until someone re-replicates them. "Available" is every bookie
with a registration key (``keys.BOOKIE_AVAILABLE_PREFIX``), read-only ones included, since a
read-only bookie still serves its entries.

Pure: the caller reads the ledgers' metadata and the available bookies; this module only
compares them. Called by ``magnetar cluster status`` (:mod:`magnetar.localcluster.audit`)
today, and meant for the autorecovery auditor once it exists. Callable from any task.
"""

from __future__ import annotations

from collections.abc import Iterable, Set
from dataclasses import dataclass

from magnetar.ids import BookieId, LedgerId
from magnetar.ledger.metadata import LedgerMetadataView


@dataclass(frozen=True, order=True)
class UnderReplicatedLedger:
    """A ledger and the bookies of its ensembles that are not available, sorted by id."""

    ledger_id: LedgerId
    missing: tuple[BookieId, ...]


def missing_bookies(metadata: LedgerMetadataView, available: Set[BookieId]) -> tuple[BookieId, ...]:
    """The bookies of any of ``metadata``'s ensembles that are not in ``available``, sorted."""
    return tuple(sorted(metadata.all_bookies() - available))


def under_replicated(
    ledgers: Iterable[tuple[LedgerId, LedgerMetadataView]], available: Set[BookieId]
) -> list[UnderReplicatedLedger]:
    """The ledgers among ``ledgers`` with a bookie missing from ``available``, by ledger id."""
    found = []
    for ledger_id, metadata in ledgers:
        missing = missing_bookies(metadata, available)
        if missing:
            found.append(UnderReplicatedLedger(ledger_id, missing))
    return sorted(found)
