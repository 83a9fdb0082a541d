"""The ledger layout of a managed ledger: which ledgers exist, in order, and how many entries each.

This is the pure knowledge that turns positions into counts and successors: the next valid
position after a mark-delete (skipping empty ledgers and ledger boundaries), the number of
entries between two positions (backlogs), whether a position names an existing entry.

Invariants: ledger ids strictly increase; entry counts are >= 0; only the last ledger (the one
being written) grows. Mutated only by the managed ledger's task on the event loop; every method
is synchronous and cheap (bisect over the ledger list, linear only over the ledgers between two
positions).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator

from magnetar.ids import EntryId, LedgerId
from magnetar.managed_ledger.position import Position


class LedgerLayout:
    """Ordered ledger ids with their (confirmed) entry counts."""

    __slots__ = ("_entries", "_ids")

    def __init__(self, ledgers: Iterable[tuple[int, int]] = ()) -> None:
        self._ids: list[int] = []
        self._entries: list[int] = []
        for lid, count in ledgers:
            self.append(LedgerId(lid), count)

    # ------------------------------------------------------------------ mutation
    def append(self, ledger_id: LedgerId, entries: int = 0) -> None:
        if self._ids and ledger_id <= self._ids[-1]:
            raise ValueError(f"ledger {ledger_id} does not follow ledger {self._ids[-1]}")
        if entries < 0:
            raise ValueError("entry count must be >= 0")
        self._ids.append(ledger_id)
        self._entries.append(entries)

    def set_entries(self, ledger_id: LedgerId, entries: int) -> None:
        self._entries[self._index(ledger_id)] = entries

    def remove(self, ledger_id: LedgerId) -> None:
        i = self._index(ledger_id)
        del self._ids[i]
        del self._entries[i]

    # ------------------------------------------------------------------ queries
    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, ledger_id: object) -> bool:
        if not isinstance(ledger_id, int):
            return False
        i = bisect_left(self._ids, ledger_id)
        return i < len(self._ids) and self._ids[i] == ledger_id

    @property
    def ledger_ids(self) -> list[LedgerId]:
        return [LedgerId(i) for i in self._ids]

    def items(self) -> Iterator[tuple[LedgerId, int]]:
        for lid, n in zip(self._ids, self._entries, strict=True):
            yield LedgerId(lid), n

    def entries_of(self, ledger_id: LedgerId) -> int:
        return self._entries[self._index(ledger_id)]

    @property
    def total_entries(self) -> int:
        return sum(self._entries)

    def first_position(self) -> Position:
        """The position before the first entry of the chain (an EARLIEST mark-delete)."""
        if not self._ids:
            return Position(LedgerId(0), EntryId(-1))
        return Position(LedgerId(self._ids[0]), EntryId(-1))

    def last_position(self) -> Position:
        """The last entry of the chain, or ``(last ledger, -1)`` if there is no entry at all."""
        for i in range(len(self._ids) - 1, -1, -1):
            if self._entries[i] > 0:
                return Position(LedgerId(self._ids[i]), EntryId(self._entries[i] - 1))
        if not self._ids:
            return Position(LedgerId(0), EntryId(-1))
        return Position(LedgerId(self._ids[-1]), EntryId(-1))

    def contains(self, pos: Position) -> bool:
        """Whether ``pos`` names an existing (confirmed) entry."""
        i = bisect_left(self._ids, pos.ledger_id)
        return (
            i < len(self._ids)
            and self._ids[i] == pos.ledger_id
            and 0 <= pos.entry_id < self._entries[i]
        )

    def next_position(self, pos: Position) -> Position | None:
        """The first existing entry strictly after ``pos``, or None if there is none yet."""
        i = bisect_left(self._ids, pos.ledger_id)
        if i < len(self._ids) and self._ids[i] == pos.ledger_id:
            if pos.entry_id + 1 < self._entries[i]:
                return Position(pos.ledger_id, EntryId(max(pos.entry_id + 1, 0)))
            i += 1
        return self._first_entry_from(i)

    def first_at_or_after(self, pos: Position) -> Position | None:
        """The first existing entry at or after ``pos``, or None."""
        i = bisect_left(self._ids, pos.ledger_id)
        if i < len(self._ids) and self._ids[i] == pos.ledger_id:
            entry = max(pos.entry_id, 0)
            if entry < self._entries[i]:
                return Position(pos.ledger_id, EntryId(entry))
            i += 1
        return self._first_entry_from(i)

    def end_position(self) -> Position:
        """Where the next entry would go if the last ledger kept growing (a caught-up read)."""
        if not self._ids:
            return Position(LedgerId(0), EntryId(0))
        return Position(LedgerId(self._ids[-1]), EntryId(self._entries[-1]))

    def count_between(self, after: Position, upto: Position) -> int:
        """Number of existing entries ``e`` with ``after < e <= upto``."""
        if upto <= after:
            return 0
        lo_i = bisect_left(self._ids, after.ledger_id)
        hi_i = bisect_right(self._ids, upto.ledger_id)
        total = 0
        for i in range(lo_i, hi_i):
            lid, count = self._ids[i], self._entries[i]
            first = after.entry_id + 1 if lid == after.ledger_id else 0
            last = min(upto.entry_id, count - 1) if lid == upto.ledger_id else count - 1
            if last >= first:
                total += last - first + 1
        return total

    def nth_from_start(self, n: int) -> Position | None:
        """The ``n``-th existing entry of the chain (1 is the first), or None if there are fewer."""
        if n < 1:
            return None
        for lid, count in zip(self._ids, self._entries, strict=True):
            if n <= count:
                return Position(LedgerId(lid), EntryId(n - 1))
            n -= count
        return None

    def nth_from_end(self, n: int) -> Position | None:
        """The ``n``-th existing entry counted back from the last (1 is the last), or None."""
        if n < 1:
            return None
        for i in range(len(self._ids) - 1, -1, -1):
            count = self._entries[i]
            if n <= count:
                return Position(LedgerId(self._ids[i]), EntryId(count - n))
            n -= count
        return None

    def _first_entry_from(self, i: int) -> Position | None:
        while i < len(self._ids):
            if self._entries[i] > 0:
                return Position(LedgerId(self._ids[i]), EntryId(0))
            i += 1
        return None

    def _index(self, ledger_id: LedgerId) -> int:
        i = bisect_left(self._ids, ledger_id)
        if i >= len(self._ids) or self._ids[i] != ledger_id:
            raise KeyError(ledger_id)
        return i
