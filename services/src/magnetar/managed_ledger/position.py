"""Positions in a managed ledger: ``Position(ledger_id, entry_id)``, totally ordered.

A position names one entry of one ledger of the chain. Positions order first by ledger id
(ledger ids grow along the chain), then by entry id. ``entry_id == -1`` is the position just
before a ledger's first entry: it is what a mark-delete position holds before anything of that
ledger was acknowledged (Pulsar's ``(ledgerId, -1)``).

Pure values; safe to share between tasks. Position is a NamedTuple rather than a frozen
dataclass because every message builds, hashes and compares several of them: a tuple is built
no slower, and compares and hashes several times faster (C code, no generated ``__lt__``/
``__hash__``; docs/benchmarks.md, "Per-message costs"). The price: a Position equals the plain
tuple ``(ledger_id, entry_id)``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

from magnetar.ids import EntryId, LedgerId


class Position(NamedTuple):
    """One entry of one ledger, ordered by (ledger_id, entry_id)."""

    ledger_id: LedgerId
    entry_id: EntryId

    def before(self) -> Position:
        """The position one entry earlier in the same ledger (may be ``(ledger, -1)``)."""
        return Position(self.ledger_id, EntryId(self.entry_id - 1))

    def after(self) -> Position:
        """The position one entry later in the same ledger (it may not exist yet)."""
        return Position(self.ledger_id, EntryId(self.entry_id + 1))

    def __str__(self) -> str:
        return f"{self.ledger_id}:{self.entry_id}"


def position(ledger_id: int, entry_id: int) -> Position:
    """Build a Position from plain ints (wire decoding, tests)."""
    return Position(LedgerId(ledger_id), EntryId(entry_id))


# A Position from a (ledger id, entry id) pair, built by tuple.__new__ at C level (the
# NamedTuple's own __new__ is a Python-level lambda): for map() over a run of positions, as an
# ACK's ids or a confirmed run of adds.
position_of_pair: Callable[[tuple[int, int]], Position] = functools.partial(tuple.__new__, Position)
