"""The cursor state machine (mark-delete auto-advance, backlog, reads) against a set-of-acks model.

The layout has ledgers of varied sizes, empty ones among them, so auto-advance must cross ledger
boundaries and skip empty ledgers. Entries are numbered 0..N-1 in chain order in the model.
"""

from __future__ import annotations

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from magnetar.managed_ledger.cursor_state import CursorState
from magnetar.managed_ledger.errors import InvalidPosition
from magnetar.managed_ledger.layout import LedgerLayout
from magnetar.managed_ledger.position import Position, position


class CursorStateMachine(RuleBasedStateMachine):
    @initialize(sizes=st.lists(st.integers(0, 5), min_size=1, max_size=6))
    def setup(self, sizes: list[int]) -> None:
        self.layout = LedgerLayout((10 + i * 3, n) for i, n in enumerate(sizes))
        self.all: list[Position] = [
            position(lid, e) for lid, n in self.layout.items() for e in range(n)
        ]
        self.state = CursorState(self.layout.first_position())
        self.acked: set[int] = set()
        self.read_idx = 0  # model: index of the next entry to read (before filtering acks)

    def _md_index(self) -> int:
        """Model: number of leading acknowledged entries."""
        k = 0
        while k in self.acked:
            k += 1
        return k

    @rule(data=st.data())
    def ack_individual(self, data: st.DataObject) -> None:
        if not self.all:
            return
        idxs = data.draw(st.lists(st.integers(0, len(self.all) - 1), max_size=4))
        self.state.deleted([self.all[i] for i in idxs], self.layout)
        self.acked.update(idxs)

    @rule(data=st.data())
    def ack_runs(self, data: st.DataObject) -> None:
        """An ACK frame listing runs of consecutive entries (the cursor takes each run of one
        ledger as a span), sometimes with a missing entry in the middle (refused)."""
        if not self.all:
            return
        spans = data.draw(
            st.lists(st.tuples(st.integers(0, len(self.all) - 1), st.integers(1, 6)), max_size=3)
        )
        idxs = [i for start, n in spans for i in range(start, min(len(self.all), start + n))]
        ids = [self.all[i] for i in idxs]
        if data.draw(st.booleans()) and ids:
            # An entry past the end of its ledger, inside a run: nothing from it on is taken.
            k = data.draw(st.integers(0, len(ids) - 1))
            lid = ids[k].ledger_id
            missing = position(lid, self.layout.entries_of(lid))
            if missing <= self.state.mark_delete:
                return  # below the mark-delete: ignored, not refused
            ids.insert(k + 1, missing)
            with pytest.raises(InvalidPosition):
                self.state.deleted(ids, self.layout)
            # The entries listed before the bad one are taken (as entry-by-entry acks always
            # did); the mark-delete catches up with them at the next change, here at once.
            idxs = idxs[: k + 1]
            self.state._auto_advance(self.layout)
            self.acked.update(idxs)
            return
        self.state.deleted(ids, self.layout)
        self.acked.update(idxs)

    @rule(data=st.data())
    def ack_cumulative(self, data: st.DataObject) -> None:
        if not self.all:
            return
        i = data.draw(st.integers(0, len(self.all) - 1))
        self.state.mark_deleted(self.all[i], self.layout)
        self.acked.update(range(i + 1))

    @rule(n=st.integers(1, 4))
    def read(self, n: int) -> None:
        got = self.state.next_read(self.layout, n)
        start = max(self.read_idx, self._md_index())
        expected = [i for i in range(start, len(self.all)) if i not in self.acked][:n]
        assert got == [self.all[i] for i in expected]
        if got:
            self.state.advance_read(got[-1], self.layout)
            self.read_idx = expected[-1] + 1

    @rule(data=st.data())
    def seek(self, data: st.DataObject) -> None:
        if not self.all:
            return
        i = data.draw(st.integers(0, len(self.all) - 1))
        self.state.seek(self.all[i], self.layout)
        self.read_idx = max(i, self._md_index())

    @invariant()
    def mark_delete_is_contiguous_prefix(self) -> None:
        if not hasattr(self, "state"):
            return
        k = self._md_index()
        if k > 0:
            assert self.state.mark_delete == self.all[k - 1]
        else:
            assert self.state.mark_delete == self.layout.first_position()
        for lower, _ in self.state.individually_deleted.ranges():
            assert lower >= self.state.mark_delete

    @invariant()
    def backlog_counts_unacked(self) -> None:
        if not hasattr(self, "state"):
            return
        assert self.state.backlog(self.layout) == len(self.all) - len(self.acked)
        assert self.state.read_position > self.state.mark_delete


TestCursorState = CursorStateMachine.TestCase


def test_reset_clears_acks_and_rewinds() -> None:
    layout = LedgerLayout([(1, 3), (2, 3)])
    st_ = CursorState(layout.first_position())
    st_.deleted([position(1, 0), position(1, 1), position(2, 2)], layout)
    assert st_.mark_delete == position(1, 1)
    st_.reset(position(1, 0), layout)
    assert st_.mark_delete == position(1, -1)
    assert st_.read_position == position(1, 0)
    assert st_.backlog(layout) == 6


def test_auto_advance_skips_empty_ledgers() -> None:
    layout = LedgerLayout([(1, 2), (2, 0), (3, 2)])
    st_ = CursorState(layout.first_position())
    st_.deleted([position(3, 0), position(1, 1)], layout)
    assert st_.mark_delete == position(1, -1)
    st_.deleted([position(1, 0)], layout)
    assert st_.mark_delete == position(3, 0)
    assert st_.backlog(layout) == 1
