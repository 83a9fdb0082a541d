"""Ledger metadata: validation, ensemble lookup by entry, ensemble change, decode errors."""

from __future__ import annotations

import pytest

from magnetar.ids import BookieId, EntryId
from magnetar.ledger.errors import InvalidLedgerConfig
from magnetar.ledger.metadata import LedgerMetadataView, LedgerState, validate_quorums

A, B, C, D = (BookieId(x) for x in "abcd")


def _view() -> LedgerMetadataView:
    return LedgerMetadataView(3, 3, 2, ensembles=((EntryId(0), (A, B, C)),), master_key=b"k")


@pytest.mark.parametrize(("e", "wq", "aq"), [(3, 3, 0), (3, 2, 3), (2, 3, 2), (0, 0, 0)])
def test_bad_quorums_are_refused_with_a_clear_message(e: int, wq: int, aq: int) -> None:
    with pytest.raises(InvalidLedgerConfig, match="ack_quorum <= write_quorum <= ensemble_size"):
        validate_quorums(e, wq, aq)


def test_ensemble_change_adds_a_segment_used_from_its_first_entry() -> None:
    changed = _view().with_ensemble_change(EntryId(5), (A, D, C))
    assert changed.ensemble_for(0) == (A, B, C)
    assert changed.ensemble_for(4) == (A, B, C)
    assert changed.ensemble_for(5) == (A, D, C)
    assert changed.ensemble_for(500) == (A, D, C)
    assert changed.all_bookies() == {A, B, C, D}
    again = changed.with_ensemble_change(EntryId(5), (A, D, B))  # no entry in it yet: replaced
    assert len(again.ensembles) == 2
    assert again.current_ensemble == (A, D, B)


def test_segment_with_duplicate_bookies_is_invalid() -> None:
    with pytest.raises(InvalidLedgerConfig):
        _view().with_ensemble_change(EntryId(1), (A, A, C))


def test_close_and_round_trip() -> None:
    closed = _view().closed_at(EntryId(9), 123)
    assert closed.state is LedgerState.CLOSED
    assert closed.is_closed
    assert LedgerMetadataView.decode(closed.encode()) == closed


def test_garbage_does_not_decode() -> None:
    with pytest.raises(InvalidLedgerConfig):
        LedgerMetadataView.decode(b"\xff\xff\xff")
    with pytest.raises(InvalidLedgerConfig):
        LedgerMetadataView.decode(b"")  # no quorums, no ensemble
