"""A set of acknowledged positions kept as sorted, disjoint ``(lower, upper]`` ranges.

This is Pulsar's ``individuallyDeletedMessages``: a cursor's individual acks above its
mark-delete position. A range ``(lower, upper]`` holds every entry ``e`` of one ledger with
``lower.entry_id < e <= upper.entry_id``; ``lower`` may be ``(ledger, -1)``.

Invariants (checked by the property tests against a set-of-ints model):
- ranges are sorted, disjoint and never touch (``upper_i < lower_{i+1}``): touching ranges merge;
- each range lies inside one ledger (``lower.ledger_id == upper.ledger_id``), so ranges of two
  ledgers never merge here; the cursor, which knows the ledger layout, advances its mark-delete
  across ledger boundaries instead;
- add, contains and discard are O(log n) searches plus list splicing (``bisect``).

Pure and synchronous; owned by one cursor.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator

from magnetar.ids import EntryId
from magnetar.managed_ledger.position import Position


class RangeSet:
    """Sorted disjoint (lower, upper] ranges of positions."""

    __slots__ = ("_lowers", "_uppers")

    def __init__(self, ranges: Iterable[tuple[Position, Position]] = ()) -> None:
        self._lowers: list[Position] = []
        self._uppers: list[Position] = []
        for lower, upper in ranges:
            self.add_range(lower, upper)

    def copy(self) -> RangeSet:
        other = RangeSet()
        other._lowers = list(self._lowers)
        other._uppers = list(self._uppers)
        return other

    # ------------------------------------------------------------------ mutation
    def add(self, pos: Position) -> None:
        """Add one entry."""
        uppers = self._uppers
        if uppers:
            last = uppers[-1]
            if last.entry_id + 1 == pos.entry_id and last.ledger_id == pos.ledger_id:
                # In-order acks extend the last range (nothing lies after it to merge with).
                uppers[-1] = pos
                return
        self.add_range(pos.before(), pos)

    def add_range(self, lower: Position, upper: Position) -> None:
        """Add every entry in ``(lower, upper]`` (one ledger), merging with neighbours."""
        if lower.ledger_id != upper.ledger_id:
            raise ValueError(f"range ({lower}, {upper}] spans ledgers")
        if upper <= lower:
            return
        # Ranges whose upper >= lower touch or overlap on the left; those whose lower <= upper
        # touch or overlap on the right: everything in [i, j) merges with the new range.
        i = bisect_left(self._uppers, lower)
        j = bisect_right(self._lowers, upper)
        if i < j:
            lower = min(lower, self._lowers[i])
            upper = max(upper, self._uppers[j - 1])
        self._lowers[i:j] = [lower]
        self._uppers[i:j] = [upper]

    def discard(self, pos: Position) -> None:
        """Remove one entry if present (splitting its range)."""
        i = bisect_left(self._uppers, pos)
        if i >= len(self._uppers) or not self._lowers[i] < pos:
            return
        lower, upper = self._lowers[i], self._uppers[i]
        pieces = [(lo, up) for lo, up in ((lower, pos.before()), (pos, upper)) if lo < up]
        self._lowers[i : i + 1] = [lo for lo, _ in pieces]
        self._uppers[i : i + 1] = [up for _, up in pieces]

    def remove_up_to(self, mark: Position) -> None:
        """Drop every entry ``<= mark`` (they are covered by the mark-delete position)."""
        i = bisect_right(self._uppers, mark)
        del self._lowers[:i]
        del self._uppers[:i]
        if self._lowers and self._lowers[0] < mark:
            # The first remaining range straddles the mark (same ledger): cut it.
            self._lowers[0] = mark

    def clear(self) -> None:
        self._lowers.clear()
        self._uppers.clear()

    # ------------------------------------------------------------------ queries
    def __contains__(self, pos: object) -> bool:
        if not isinstance(pos, Position):
            return False
        i = bisect_left(self._uppers, pos)
        return i < len(self._uppers) and self._lowers[i] < pos

    def covers(self, lower: Position, upper: Position) -> bool:
        """Whether every entry in ``(lower, upper]`` (one ledger) is in the set."""
        i = bisect_left(self._uppers, upper)
        return i < len(self._uppers) and self._lowers[i] <= lower

    def __len__(self) -> int:
        """Number of ranges (not entries: see :meth:`count`)."""
        return len(self._lowers)

    def __bool__(self) -> bool:
        return bool(self._lowers)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RangeSet):
            return NotImplemented
        return self._lowers == other._lowers and self._uppers == other._uppers

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        inner = ", ".join(f"({lo}, {up}]" for lo, up in self.ranges())
        return f"RangeSet[{inner}]"

    def ranges(self) -> Iterator[tuple[Position, Position]]:
        """The ranges as ``(lower_exclusive, upper_inclusive)``, in order."""
        return zip(self._lowers, self._uppers, strict=True)

    def first_range(self) -> tuple[Position, Position] | None:
        if not self._lowers:
            return None
        return self._lowers[0], self._uppers[0]

    def positions(self) -> Iterator[Position]:
        """Every entry in the set, in order."""
        for lower, upper in self.ranges():
            for e in range(lower.entry_id + 1, upper.entry_id + 1):
                yield Position(lower.ledger_id, EntryId(e))

    def count(self) -> int:
        """Number of entries in the set."""
        return sum(up.entry_id - lo.entry_id for lo, up in self.ranges())

    def count_between(self, after: Position, upto: Position) -> int:
        """Number of entries ``e`` in the set with ``after < e <= upto``."""
        total = 0
        i = bisect_left(self._uppers, after)
        while i < len(self._lowers) and self._lowers[i] < upto:
            # Both clipped ends lie in the range's own ledger: the range is one ledger wide and
            # lower < after <= upper (or lower < upto < upper) forces the same ledger.
            lo, up = max(self._lowers[i], after), min(self._uppers[i], upto)
            total += max(0, up.entry_id - lo.entry_id)
            i += 1
        return total
