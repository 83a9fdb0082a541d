"""The counters a bookie keeps for its metrics: adds, reads, journal syncs.

Plain integers bumped where the work happens, read when ``/metrics`` is scraped
(:mod:`magnetar.bookie.bookie_metrics` turns them into samples); nothing here knows about
OpenTelemetry. The journal's sync latency goes to a :class:`LatencyRecorder` the process wiring
puts in place (a histogram); until then it is discarded.

Who writes what: :class:`JournalStats` — the journal's writer thread only (one writer: no lost
updates; the loop reads a value at most one group old), but for ``handback_latency``, which
the loop records when it delivers a group. :class:`BookieStats` — the bookie core
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
    prefilled_bytes: int = 0
    """Zeros written ahead of the segment's end (``JournalConfig.prealloc_bytes``)."""
    sync_latency: LatencyRecorder = field(default_factory=_Discard)
    """Seconds from a group's first write to the end of its sync (its ``O_DSYNC`` write, or
    its write and fdatasync)."""
    queue_wait: LatencyRecorder = field(default_factory=_Discard)
    """Seconds from the hand-off of a group's first unit to the start of the group's write:
    the group wait (``max_group_wait_ms``), the previous group's write and the writer
    thread's wait for the GIL. Per group."""
    apply_latency: LatencyRecorder = field(default_factory=_Discard)
    """Seconds a group's apply to ledger storage took (entry log, index), after its sync."""
    handback_latency: LatencyRecorder = field(default_factory=_Discard)
    """Seconds from the writer thread posting a group's outcome to the loop delivering it
    (the self-pipe wake-up, the loop's lag, the GIL). Recorded on the loop, not the writer."""


@dataclass(slots=True)
class BookieStats:
    journal: JournalStats
    entries_added: int = 0
    """Add entries made durable (journalled, synced, applied)."""
    entries_read: int = 0
    """Entries returned by reads (single and range)."""
