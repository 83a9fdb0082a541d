"""Ledger fragments and what re-replication must do with them: pure decisions, no I/O.

A *fragment* is one bookie's share of one ensemble segment (BookKeeper's ``LedgerFragment``):
the entries of the segment whose write set includes the bookie's position. Re-replicating a
fragment copies those entries from the other replicas to a replacement bookie, then names the
replacement in that segment's ensemble instead.

Rules (BookKeeper's): a segment that is not the ledger's last, or any segment of a CLOSED
ledger, is immutable and may be copied at once. The last segment of an OPEN ledger belongs to
its writer while the writer lives (its ensemble change replaces a failed bookie); once the
writer is gone the ledger is recovered (fenced and closed) first, then copied like any other.

Also here: the periodic check's test of a live bookie's entry ranges
(:func:`lacks_entries`). Callable from any task.
"""

from __future__ import annotations

import bisect
from collections.abc import Collection, Sequence, Set
from dataclasses import dataclass

from magnetar.ids import BookieId, EntryId
from magnetar.ledger.distribution import write_set
from magnetar.ledger.metadata import LedgerMetadataView


@dataclass(frozen=True, order=True)
class Fragment:
    """Bookie ``bookie`` at ``position`` of the segment holding entries ``first..last``
    (``last < first``: the segment holds no entry)."""

    first: EntryId
    last: EntryId
    position: int
    bookie: BookieId


def segment_bounds(metadata: LedgerMetadataView, index: int) -> tuple[EntryId, EntryId]:
    """The first and last entry id of segment ``index``: up to the next segment's start - 1;
    the last segment up to the ledger's last entry (-1 while OPEN: copied only once closed)."""
    first = metadata.ensembles[index][0]
    if index + 1 < len(metadata.ensembles):
        return first, EntryId(metadata.ensembles[index + 1][0] - 1)
    return first, metadata.last_entry_id


def fragments_of(
    metadata: LedgerMetadataView, bad: Set[BookieId], *, include_open_tail: bool
) -> list[Fragment]:
    """The fragments of ``metadata`` on a ``bad`` bookie that may be copied now.

    ``include_open_tail``: whether the last segment of an OPEN ledger may be copied (never,
    while its writer lives; after recovery the ledger is CLOSED anyway)."""
    found = []
    segments = metadata.ensembles
    for index, (_, bookies) in enumerate(segments):
        is_tail = index == len(segments) - 1
        if is_tail and not metadata.is_closed and not include_open_tail:
            continue
        first, last = segment_bounds(metadata, index)
        for position, bookie in enumerate(bookies):
            if bookie in bad:
                found.append(Fragment(first, last, position, bookie))
    return found


def open_tail_needs_writer(metadata: LedgerMetadataView, bad: Set[BookieId]) -> bool:
    """Whether the last segment of an OPEN ledger names a bad bookie (a job for its writer, or
    for recovery once the writer is gone)."""
    return not metadata.is_closed and bool(set(metadata.current_ensemble) & bad)


def fragment_entries(metadata: LedgerMetadataView, fragment: Fragment) -> list[EntryId]:
    """The entries of ``fragment`` its bookie stores (its position is in their write set)."""
    size, quorum = metadata.ensemble_size, metadata.write_quorum
    return [
        EntryId(e)
        for e in range(fragment.first, fragment.last + 1)
        if fragment.position in write_set(e, size, quorum)
    ]


def lacks_entries(
    metadata: LedgerMetadataView, bookie: BookieId, ranges: Sequence[tuple[int, int]]
) -> bool:
    """Whether ``bookie`` (live, listing ``ranges`` of entries it holds, sorted, inclusive) lacks
    an entry of a CLOSED ledger that its fragments should hold."""
    starts = [first for first, _ in ranges]

    def holds(entry_id: int) -> bool:
        i = bisect.bisect_right(starts, entry_id) - 1
        return i >= 0 and ranges[i][1] >= entry_id

    for index, (_, bookies) in enumerate(metadata.ensembles):
        if bookie not in bookies:
            continue
        first, last = segment_bounds(metadata, index)
        fragment = Fragment(first, last, bookies.index(bookie), bookie)
        if any(not holds(e) for e in fragment_entries(metadata, fragment)):
            return True
    return False


def bookies_to_replace(
    metadata: LedgerMetadataView,
    marked: Collection[BookieId],
    decommissioning: Set[BookieId],
    intact: Set[BookieId] = frozenset(),
) -> frozenset[BookieId]:
    """The bookies of ``metadata`` whose fragments need copying: the ones its mark names,
    unless found ``intact`` (registered again and holding every entry they should: a lost
    bookie that came back), and the ones being decommissioned, as far as the ledger still names
    them. A bookie that is merely down is the auditor's call (after
    ``lost_bookie_recovery_delay``), not the worker's."""
    suspects = (set(marked) - set(intact)) | set(decommissioning)
    return frozenset(suspects & metadata.all_bookies())
