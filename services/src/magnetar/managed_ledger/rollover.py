"""When to roll the managed ledger over to a new ledger: by entries, bytes or age.

Pure. The managed ledger asks :meth:`RolloverPolicy.should_rollover` before dispatching each
add, with the counts of adds already *dispatched* to the current ledger (not just confirmed), so
that a burst of concurrent adds never overshoots ``max_entries``. An age-based rollover only
happens for a ledger that holds entries, so an idle topic does not churn empty ledgers.
A limit <= 0 is disabled.

As in Pulsar (``managedLedgerMinLedgerRolloverTimeMinutes``), a ledger younger than
``min_age_s`` is not rolled over even when a limit is reached: under a high publish rate the
entry limit would otherwise close a ledger every few seconds, and each rollover holds the adds
that arrive meanwhile (close, create, two metadata writes).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RolloverPolicy:
    max_entries: int = 50_000
    max_bytes: int = 0
    max_age_s: float = 0.0
    min_age_s: float = 0.0

    def should_rollover(self, entries: int, size_bytes: int, age_s: float) -> bool:
        full = (
            (self.max_entries > 0 and entries >= self.max_entries)
            or (self.max_bytes > 0 and size_bytes >= self.max_bytes)
            or (self.max_age_s > 0 and entries > 0 and age_s >= self.max_age_s)
        )
        return full and age_s >= self.min_age_s

    def entry_room(self, entries: int, age_s: float) -> int:
        """How many more adds the entry and age limits let go to a ledger holding ``entries``
        (asked once per run of adds; ``should_rollover`` said no for the first of them)."""
        if age_s < self.min_age_s:
            return 1 << 62
        if self.max_age_s > 0 and age_s >= self.max_age_s:
            return 1 if entries == 0 else 0
        if self.max_entries > 0:
            return max(0, self.max_entries - entries)
        return 1 << 62

    def byte_room(self, size_bytes: int, age_s: float) -> int:
        """Bytes a ledger holding ``size_bytes`` may still take before the next add rolls it
        over: an add may go while the bytes before it are under this (unbounded: a huge
        number)."""
        if age_s < self.min_age_s or self.max_bytes <= 0:
            return 1 << 62
        return max(0, self.max_bytes - size_bytes)
