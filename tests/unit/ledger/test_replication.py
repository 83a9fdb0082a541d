"""Under-replicated ledgers: any segment's bookie that is not available counts, sorted by id."""

from __future__ import annotations

from magnetar.ids import BookieId, EntryId, LedgerId
from magnetar.ledger.metadata import LedgerMetadataView, LedgerState
from magnetar.ledger.replication import UnderReplicatedLedger, missing_bookies, under_replicated

A, B, C, D = (BookieId(x) for x in "abcd")


def _view(*segments: tuple[int, tuple[BookieId, ...]]) -> LedgerMetadataView:
    return LedgerMetadataView(
        3, 2, 2, ensembles=tuple((EntryId(first), bookies) for first, bookies in segments)
    )


def test_all_bookies_available_means_nothing_is_under_replicated() -> None:
    ledgers = [(LedgerId(1), _view((0, (A, B, C)))), (LedgerId(2), _view((0, (B, C, D))))]
    assert under_replicated(ledgers, {A, B, C, D}) == []


def test_a_missing_bookie_of_an_earlier_segment_counts_too() -> None:
    replaced = _view((0, (A, B, C)), (10, (D, B, C)))  # A was replaced at entry 10
    assert missing_bookies(replaced, {B, C, D}) == (A,)
    assert missing_bookies(replaced, {A, B, C, D}) == ()


def test_only_the_ledgers_on_a_missing_bookie_are_listed_by_id_with_their_missing_bookies() -> None:
    ledgers = [
        (LedgerId(7), _view((0, (B, C, D)))),
        (LedgerId(3), _view((0, (A, B, C)))),
        (LedgerId(5), _view((0, (A, C, D)))),
    ]
    assert under_replicated(ledgers, {B, C}) == [
        UnderReplicatedLedger(LedgerId(3), (A,)),
        UnderReplicatedLedger(LedgerId(5), (A, D)),
        UnderReplicatedLedger(LedgerId(7), (D,)),
    ]


def test_a_closed_ledger_is_checked_like_an_open_one() -> None:
    closed = _view((0, (A, B, C))).closed_at(EntryId(4), 50)
    assert closed.state is LedgerState.CLOSED
    assert under_replicated([(LedgerId(1), closed)], {A, C}) == [
        UnderReplicatedLedger(LedgerId(1), (B,))
    ]
