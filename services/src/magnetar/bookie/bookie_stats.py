"""The counters a bookie keeps for its metrics: adds, reads, journal syncs.

Plain integers bumped where the work happens, read when ``/metrics`` is scraped
(:mod:`magnetar.bookie.bookie_metrics` turns them into samples); nothing here knows about
OpenTelemetry. The journal's sync latency goes to a :class:`LatencyRecorder` the process wiring
puts in place (a histogram); until then it is discarded.

Who writes what: :class:`JournalStats` — the journal's writer thread only (one writer: no lost
updates; the loop reads a value at most one group old). :class:`BookieStats` — the bookie core
on the event loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


class LatencyRecorder(Protocol):
    def record(self, amount: float) -> None: ...


class _Discard:
    def record(self, amount: float) -> None:
        pass


@dataclass(slots=True)
class JournalStats:
    syncs: int = 0
    """Groups written (and fdatasynced when journal sync is on)."""
    written_bytes: int = 0
    sync_latency: LatencyRecorder = field(default_factory=_Discard)
    """Seconds from a group's first write to the end of its fdatasync."""


@dataclass(slots=True)
class BookieStats:
    journal: JournalStats
    entries_added: int = 0
    """Add entries made durable (journalled, synced, applied)."""
    entries_read: int = 0
    """Entries returned by reads (single and range)."""
