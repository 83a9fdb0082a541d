"""The state machine of one cursor, without I/O: mark-delete, read position, individual acks.

State (Pulsar's ManagedCursorImpl, minus the I/O):
- ``mark_delete``: every entry ``<= mark_delete`` is acknowledged (cumulative ack);
- ``individually_deleted``: acknowledged entries above ``mark_delete`` (a :class:`RangeSet`);
- ``read_position``: the next entry :meth:`next_read` hands out; always ``> mark_delete``;
- ``batch_deleted``: for batched entries acknowledged in part (batch-index acks), the mask of
  indexes still unacked (bit i set = index i unacked), Pulsar's ``batchDeletedIndexes``. Only
  entries not otherwise acknowledged are kept: an entry leaves it when it is acknowledged whole
  (individually, by the mark-delete, or by its last index).

Invariants: every range lies strictly above ``mark_delete``; when the first acknowledged range
becomes contiguous with ``mark_delete`` (given the ledger layout, so across ledger boundaries
and empty ledgers too) the mark-delete advances over it (auto-advance); ``mark_delete`` only
moves backwards through :meth:`reset`; the read position only backwards through :meth:`seek`.

Every method takes the current :class:`LedgerLayout`; nothing here blocks or awaits. Owned by
one cursor on the event loop.
"""

from __future__ import annotations

from collections.abc import Iterable

from magnetar.managed_ledger.errors import InvalidPosition
from magnetar.managed_ledger.layout import LedgerLayout
from magnetar.managed_ledger.position import Position
from magnetar.managed_ledger.range_set import RangeSet

# NamedTuple's generated __new__ is a Python-level lambda: the per-entry lines below build
# their tuples with tuple.__new__ directly (about half the cost).
_new_tuple = tuple.__new__


class CursorState:
    """Mark-delete position, read position and individually deleted ranges of one cursor."""

    __slots__ = ("batch_deleted", "individually_deleted", "mark_delete", "read_position")

    def __init__(
        self,
        mark_delete: Position,
        read_position: Position | None = None,
        individually_deleted: RangeSet | None = None,
        batch_deleted: dict[Position, int] | None = None,
    ) -> None:
        self.mark_delete = mark_delete
        self.individually_deleted = individually_deleted or RangeSet()
        self.individually_deleted.remove_up_to(mark_delete)
        self.batch_deleted = {
            p: m for p, m in (batch_deleted or {}).items() if m and not self.is_acknowledged(p)
        }
        self.read_position = read_position or mark_delete.after()
        if self.read_position <= mark_delete:
            self.read_position = mark_delete.after()

    # ------------------------------------------------------------------ acks
    def mark_deleted(self, pos: Position, layout: LedgerLayout) -> bool:
        """Cumulative ack up to ``pos``; True if the state changed.

        A position at or below the current mark-delete is a no-op (a redelivered ack); one
        beyond the last confirmed entry is :class:`InvalidPosition`.
        """
        if pos > layout.last_position():
            raise InvalidPosition(pos, f"beyond the last entry {layout.last_position()}")
        if pos <= self.mark_delete:
            return False
        self.mark_delete = pos
        self.individually_deleted.remove_up_to(pos)
        self._auto_advance(layout)
        return True

    def deleted(self, positions: Iterable[Position], layout: LedgerLayout) -> bool:
        """Individual acks; True if the state changed. Positions <= mark-delete are ignored.

        Taken as runs: each span of consecutive entries of one ledger (in ascending order, as
        an ACK frame usually lists them) is one mark-delete move or one range added, not one
        update per entry; anything else goes entry by entry. The result is the same either
        way (tests/property/test_range_set_cursor_state.py)."""
        run = positions if isinstance(positions, list) else list(positions)
        changed = False
        n = len(run)
        i = 0
        while i < n:
            first = run[i]
            ledger = first.ledger_id
            last = first.entry_id
            j = i + 1
            while j < n:
                nxt = run[j]
                if nxt.ledger_id != ledger or nxt.entry_id != last + 1:
                    break
                last += 1
                j += 1
            if j - i == 1:
                if self._deleted_one(first, layout):
                    changed = True
            elif self._deleted_span(run, i, j, layout):
                changed = True
            i = j
        if changed:
            self._auto_advance(layout)
        return changed

    def _deleted_one(self, pos: Position, layout: LedgerLayout) -> bool:
        mark = self.mark_delete
        if pos <= mark:
            return False
        ranges = self.individually_deleted
        if not ranges and pos.ledger_id == mark.ledger_id and pos.entry_id == mark.entry_id + 1:
            # In-order ack of the entry right after the mark-delete, nothing acked above it:
            # the auto-advance would move the mark-delete onto it, so do that directly
            # instead of adding a range and removing it again.
            if not layout.contains(pos):
                raise InvalidPosition(pos, "no such entry")
            self.mark_delete = pos
        else:
            if pos in ranges:
                return False
            if not layout.contains(pos):
                raise InvalidPosition(pos, "no such entry")
            ranges.add(pos)
        if self.batch_deleted:
            self.batch_deleted.pop(pos, None)
        return True

    def _deleted_span(self, run: list[Position], i: int, j: int, layout: LedgerLayout) -> bool:
        """``run[i:j]``: consecutive entries of one ledger, ascending."""
        mark = self.mark_delete
        high = run[j - 1]
        if high <= mark:
            return False
        low = run[i]
        if low <= mark:  # the span straddles the mark-delete, so it is in the mark's ledger
            low = mark.after()
        if not (layout.contains(low) and layout.contains(high)):
            # Some entry does not exist: entry by entry, so the error names the first one.
            changed = False
            for k in range(i, j):
                if self._deleted_one(run[k], layout):
                    changed = True
            return changed
        ranges = self.individually_deleted
        ledger = low.ledger_id
        if not ranges and ledger == mark.ledger_id and low.entry_id == mark.entry_id + 1:
            self.mark_delete = high
        else:
            lower = low.before()
            if ranges.covers(lower, high):
                return False
            ranges.add_range(lower, high)
        batches = self.batch_deleted
        if batches:
            for p in [p for p in batches if low <= p <= high]:
                del batches[p]
        return True

    def _auto_advance(self, layout: LedgerLayout) -> None:
        while (first := self.individually_deleted.first_range()) is not None:
            lower, upper = first
            following = layout.next_position(self.mark_delete)
            if following is None or not lower < following <= upper:
                break
            self.mark_delete = upper
            self.individually_deleted.remove_up_to(upper)
        if self.read_position <= self.mark_delete:
            self.read_position = self._normalized(self.mark_delete.after(), layout)
        if self.batch_deleted:
            for p in [p for p in self.batch_deleted if p <= self.mark_delete]:
                del self.batch_deleted[p]

    def batch_acked(self, pos: Position, unacked: int, layout: LedgerLayout) -> bool:
        """Batch-index acks of the entry at ``pos``: ``unacked`` masks the indexes still unacked
        (ANDed with what was recorded). No index left: the entry is acknowledged whole. True if
        the state changed; an entry already acknowledged is a no-op."""
        if self.is_acknowledged(pos):
            return False
        previous = self.batch_deleted.get(pos)
        merged = unacked if previous is None else previous & unacked
        if not merged:
            return self.deleted([pos], layout)
        if merged == previous:
            return False
        if not layout.contains(pos):
            raise InvalidPosition(pos, "no such entry")
        self.batch_deleted[pos] = merged
        return True

    def batch_unacked(self, pos: Position) -> int | None:
        """The unacked-index mask of a partly acknowledged batch entry, else None."""
        return self.batch_deleted.get(pos)

    # ------------------------------------------------------------------ reads
    def is_acknowledged(self, pos: Position) -> bool:
        return pos <= self.mark_delete or pos in self.individually_deleted

    def unacknowledged(self, positions: Iterable[Position], layout: LedgerLayout) -> list[Position]:
        """Those of ``positions`` that exist and are not acknowledged (in their order): the
        entries of an ACK frame the cursor still has to record, filtered in one call."""
        mark = self.mark_delete
        ranges = self.individually_deleted
        contains = layout.contains
        if ranges:
            return [p for p in positions if p > mark and p not in ranges and contains(p)]
        return [p for p in positions if p > mark and contains(p)]

    def next_read(self, layout: LedgerLayout, max_entries: int) -> list[Position]:
        """Up to ``max_entries`` unacknowledged entries from the read position (no advance)."""
        out: list[Position] = []
        ranges = self.individually_deleted
        pos = layout.first_at_or_after(self.read_position)
        while pos is not None and len(out) < max_entries:
            # A run of consecutive entries of one ledger at a time (one layout lookup per run).
            ledger, first = pos.ledger_id, pos.entry_id
            end = min(layout.entries_of(ledger), first + max_entries - len(out))
            run = [_new_tuple(Position, (ledger, e)) for e in range(first, end)]
            out.extend([p for p in run if p not in ranges] if ranges else run)
            pos = layout.next_position(run[-1]) if len(out) < max_entries else None
        return out

    def advance_read(self, last_read: Position, layout: LedgerLayout) -> None:
        """Move the read position past ``last_read`` (never backwards)."""
        target = self._normalized(last_read.after(), layout)
        if target > self.read_position:
            self.read_position = target

    def has_more(self, layout: LedgerLayout) -> bool:
        return bool(self.next_read(layout, 1))

    # ------------------------------------------------------------------ counts
    def backlog(self, layout: LedgerLayout) -> int:
        """Entries not yet acknowledged (Pulsar's ``numberOfEntriesInBacklog``)."""
        last = layout.last_position()
        return layout.count_between(self.mark_delete, last) - (
            self.individually_deleted.count_between(self.mark_delete, last)
        )

    def unread(self, layout: LedgerLayout) -> int:
        """Entries at or after the read position (acknowledged or not)."""
        return layout.count_between(self.read_position.before(), layout.last_position())

    # ------------------------------------------------------------------ moves
    def seek(self, pos: Position, layout: LedgerLayout) -> None:
        """Move the read position to ``pos`` (clamped above the mark-delete)."""
        if pos > layout.end_position():
            raise InvalidPosition(pos, "beyond the end of the managed ledger")
        if pos <= self.mark_delete:
            pos = self.mark_delete.after()
        self.read_position = self._normalized(pos, layout)

    def reset(self, pos: Position, layout: LedgerLayout) -> None:
        """Make ``pos`` the next entry to read and everything before it acknowledged.

        Pulsar's ``resetCursor``: the mark-delete becomes the entry before ``pos``, the read
        position ``pos``, and individual acks are cleared.
        """
        if pos > layout.end_position():
            raise InvalidPosition(pos, "beyond the end of the managed ledger")
        self.individually_deleted.clear()
        self.batch_deleted.clear()
        self.mark_delete = pos.before()
        self.read_position = self._normalized(pos, layout)

    @staticmethod
    def _normalized(pos: Position, layout: LedgerLayout) -> Position:
        found = layout.first_at_or_after(pos)
        if found is not None:
            return found
        end = layout.end_position()
        return max(pos, end) if pos.ledger_id == end.ledger_id else end
