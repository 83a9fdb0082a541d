"""Which fragments re-replication copies, which entries they hold, what the audit calls lacking."""

from __future__ import annotations

from magnetar.autorecovery.fragments import (
    Fragment,
    bookies_to_replace,
    fragment_entries,
    fragments_of,
    lacks_entries,
    open_tail_needs_writer,
)
from magnetar.ids import BookieId, EntryId
from magnetar.ledger.metadata import LedgerMetadataView, LedgerState

A, B, C, D = (BookieId(x) for x in "abcd")


def ledger(state: LedgerState = LedgerState.CLOSED, last: int = 9) -> LedgerMetadataView:
    """E3 Wq2: entries 0..4 on (a, b, c), 5.. on (a, b, d)."""
    return LedgerMetadataView(
        ensemble_size=3,
        write_quorum=2,
        ack_quorum=2,
        ensembles=((EntryId(0), (A, B, C)), (EntryId(5), (A, B, D))),
        state=state,
        last_entry_id=EntryId(last if state is LedgerState.CLOSED else -1),
    )


def test_a_closed_ledger_copies_every_segment_naming_the_bad_bookie() -> None:
    assert fragments_of(ledger(), {A}, include_open_tail=False) == [
        Fragment(EntryId(0), EntryId(4), 0, A),
        Fragment(EntryId(5), EntryId(9), 0, A),
    ]


def test_the_open_tail_is_left_to_a_live_writer() -> None:
    open_ledger = ledger(LedgerState.OPEN)
    assert fragments_of(open_ledger, {A}, include_open_tail=False) == [
        Fragment(EntryId(0), EntryId(4), 0, A)
    ]
    assert open_tail_needs_writer(open_ledger, {A})
    assert not open_tail_needs_writer(open_ledger, {C})  # c is only in the closed segment
    assert not open_tail_needs_writer(ledger(), {A})


def test_a_fragment_holds_the_entries_whose_write_set_has_its_position() -> None:
    # E3 Wq2: entry e goes to positions e%3 and (e+1)%3; position 2 holds e%3 in {1, 2}.
    entries = fragment_entries(ledger(), Fragment(EntryId(0), EntryId(4), 2, C))
    assert entries == [1, 2, 4]


def test_an_empty_tail_segment_has_no_entries() -> None:
    closed_early = ledger(last=4)
    (tail,) = fragments_of(closed_early, {D}, include_open_tail=False)
    assert tail == Fragment(EntryId(5), EntryId(4), 2, D)
    assert fragment_entries(closed_early, tail) == []


def test_lacks_entries_finds_a_gap_in_what_a_live_bookie_holds() -> None:
    # c (position 2 of the first segment) must hold 1, 2, 4.
    assert not lacks_entries(ledger(), C, [(1, 2), (4, 4)])
    assert not lacks_entries(ledger(), C, [(0, 9)])
    assert lacks_entries(ledger(), C, [(1, 1), (4, 4)])
    assert lacks_entries(ledger(), C, [])
    assert not lacks_entries(ledger(), BookieId("z"), [])  # not in the ledger at all


def test_bookies_to_replace_are_marked_or_decommissioning_and_still_named() -> None:
    meta = ledger()
    assert bookies_to_replace(meta, [], frozenset()) == frozenset()
    assert bookies_to_replace(meta, [C], frozenset()) == {C}
    assert bookies_to_replace(meta, [], frozenset({D})) == {D}
    assert bookies_to_replace(meta, [C], frozenset({D, BookieId("x")})) == {C, D}
    assert bookies_to_replace(meta, [BookieId("gone")], frozenset()) == frozenset()
    assert bookies_to_replace(meta, [A, C], frozenset(), intact={C}) == {A}  # c came back whole
    assert bookies_to_replace(meta, [D], frozenset({D}), intact={D}) == {D}  # decommissioning
