"""The decommission status: Done, InProgress, or Failed with a message that says why."""

from __future__ import annotations

from magnetar.autorecovery.decommission import DecommissionState, decommission_status
from magnetar.ids import BookieId, EntryId, LedgerId
from magnetar.ledger.metadata import LedgerMetadataView

A, B, C, D = (BookieId(x) for x in "abcd")


def e3(*bookies: BookieId) -> LedgerMetadataView:
    return LedgerMetadataView(
        ensemble_size=3, write_quorum=2, ack_quorum=2, ensembles=((EntryId(0), bookies),)
    )


def test_done_when_no_ledger_names_the_bookie() -> None:
    status = decommission_status(A, [(LedgerId(1), e3(B, C, D))], {B, C, D}, {A})
    assert status.state is DecommissionState.DONE
    assert status.ledgers_remaining == 0
    assert status.to_json()["state"] == "Done"


def test_in_progress_while_a_replacement_exists() -> None:
    ledgers = [(LedgerId(1), e3(A, B, C)), (LedgerId(2), e3(A, C, D)), (LedgerId(3), e3(B, C, D))]
    status = decommission_status(A, ledgers, {B, C, D}, {A})
    assert status.state is DecommissionState.IN_PROGRESS
    assert status.ledgers_remaining == 2
    assert status.to_json() == {
        "bookieId": "a",
        "state": "InProgress",
        "ledgersRemaining": 2,
        "message": status.message,
    }


def test_failed_when_too_few_bookies_remain_and_says_what_to_do() -> None:
    status = decommission_status(A, [(LedgerId(7), e3(A, B, C))], {B, C}, {A})
    assert status.state is DecommissionState.FAILED
    assert "ledger 7" in status.message
    assert "needs 3 distinct bookies" in status.message
    assert "add a bookie" in status.message


def test_other_decommissioning_bookies_are_no_replacement() -> None:
    status = decommission_status(A, [(LedgerId(7), e3(A, B, C))], {B, C, D}, {A, D})
    assert status.state is DecommissionState.FAILED
