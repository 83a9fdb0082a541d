"""``LedgerLayout.nth_from_start`` / ``nth_from_end`` against the flat list of positions they
index (empty ledgers and gaps in ledger ids included)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from magnetar.ids import EntryId, LedgerId
from magnetar.managed_ledger import Position
from magnetar.managed_ledger.layout import LedgerLayout

counts = st.lists(st.integers(min_value=0, max_value=5), max_size=6)


def _layout_and_positions(entry_counts: list[int]) -> tuple[LedgerLayout, list[Position]]:
    ledgers = [(3 * i + 1, n) for i, n in enumerate(entry_counts)]
    flat = [Position(LedgerId(lid), EntryId(e)) for lid, n in ledgers for e in range(n)]
    return LedgerLayout(ledgers), flat


@given(counts, st.integers(min_value=-2, max_value=40))
def test_nth_from_start_indexes_the_positions(entry_counts: list[int], n: int) -> None:
    layout, flat = _layout_and_positions(entry_counts)
    expected = flat[n - 1] if 1 <= n <= len(flat) else None
    assert layout.nth_from_start(n) == expected


@given(counts, st.integers(min_value=-2, max_value=40))
def test_nth_from_end_indexes_the_positions_backwards(entry_counts: list[int], n: int) -> None:
    layout, flat = _layout_and_positions(entry_counts)
    expected = flat[-n] if 1 <= n <= len(flat) else None
    assert layout.nth_from_end(n) == expected
