"""Hypothesis: ledger metadata survives encode/decode unchanged."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from magnetar.ids import BookieId, EntryId
from magnetar.ledger.metadata import LedgerMetadataView, LedgerState

bookie_ids = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1)


@st.composite
def views(draw: st.DrawFn) -> LedgerMetadataView:
    e = draw(st.integers(1, 6))
    wq = draw(st.integers(1, e))
    aq = draw(st.integers(1, wq))
    starts = sorted(draw(st.sets(st.integers(1, 2**40), max_size=4)))
    segments = []
    for first in [0, *starts]:
        bookies = draw(st.lists(bookie_ids, min_size=e, max_size=e, unique=True))
        segments.append((EntryId(first), tuple(BookieId(b) for b in bookies)))
    return LedgerMetadataView(
        ensemble_size=e,
        write_quorum=wq,
        ack_quorum=aq,
        ensembles=tuple(segments),
        state=draw(st.sampled_from(LedgerState)),
        last_entry_id=EntryId(draw(st.integers(-1, 2**62))),
        length=draw(st.integers(0, 2**63)),
        custom=draw(st.dictionaries(st.text(max_size=10), st.binary(max_size=20), max_size=3)),
        master_key=draw(st.binary(max_size=32)),
        ctime_ms=draw(st.integers(0, 2**50)),
    )


@settings(max_examples=200)
@given(views())
def test_metadata_round_trip(view: LedgerMetadataView) -> None:
    assert LedgerMetadataView.decode(view.encode()) == view
