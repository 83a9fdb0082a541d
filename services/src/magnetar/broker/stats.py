"""Rate meters for the admin's topic stats (msgRateIn/Out, msgThroughputIn/Out, msgRateExpired,
msgRateRedeliver): counters on the hot path, sampled into rates over a window when read.

Pulsar increments counters as messages pass and turns them into rates every
``statsUpdateFrequencyInSecs`` (60 s by default). A :class:`RateMeter` does the same without a
timer task: :meth:`RateMeter.record` adds to two integers and, at most once per
:data:`SAMPLE_SPACING_S`, first appends a ``(time, messages, bytes)`` sample of the counters as
they were; :meth:`RateMeter.rate` reads the rate over the last ``window_s`` seconds as the
counters' growth since the window's start (interpolated between the two samples around it),
divided by the window. So:

- before a full window has passed, the baseline is the meter's creation, and the rate is the
  average since then (meaningful after a second, not zero for a minute);
- a meter that has recorded nothing for ``window_s`` reads 0.0;
- at most :data:`MAX_SAMPLES` samples are kept (memory per meter is bounded); a window longer
  than ``MAX_SAMPLES * SAMPLE_SPACING_S`` is measured over the samples kept.

Rates of a topic are the sums of its producers' (in) and subscriptions' (out) meters; a
subscription's out-rate is the sum of its consumers'. Units: messages/s and bytes/s.

:class:`OutTotals` keeps what a subscription's departed consumers dispatched, so that its
out counters (consumers' plus departed) never go backwards while it exists (Pulsar's
``msgOutFromRemovedConsumer``); ``pulsar_out_messages_total`` reads them.

Sans-I/O: the clock is injected (``time.monotonic`` by default); no task, no awaits. Owned by one
producer, consumer or subscription on the broker's loop.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

DEFAULT_WINDOW_S = 60.0
"""Pulsar's ``statsUpdateFrequencyInSecs`` default."""
SAMPLE_SPACING_S = 1.0
MAX_SAMPLES = 256

Clock = Callable[[], float]


@dataclass(frozen=True, slots=True)
class Rate:
    """Messages and bytes per second over a window."""

    messages: float = 0.0
    bytes: float = 0.0

    def __add__(self, other: Rate) -> Rate:
        return Rate(self.messages + other.messages, self.bytes + other.bytes)


ZERO = Rate()


def iso_utc(ts: float) -> str:
    """A wall-clock time as the stats show it: ``2024-01-31T12:00:00Z``."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts)) + "Z"


def total(rates: Iterable[Rate]) -> Rate:
    out = ZERO
    for r in rates:
        out = out + r
    return out


@dataclass(slots=True)
class OutTotals:
    """Messages and bytes dispatched by consumers that have left a subscription."""

    messages: int = 0
    bytes: int = 0

    def add(self, messages: int, size: int) -> None:
        self.messages += messages
        self.bytes += size


class RateMeter:
    """Cumulative message and byte counters with enough samples to read a windowed rate."""

    __slots__ = ("_clock", "_last_record", "_samples", "bytes", "messages")

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        self.messages = 0
        self.bytes = 0
        now = clock()
        self._last_record = float("-inf")
        self._samples: deque[tuple[float, int, int]] = deque([(now, 0, 0)], maxlen=MAX_SAMPLES)

    def record(self, messages: int, size: int = 0) -> None:
        """Count ``messages`` (and ``size`` bytes) now."""
        now = self._clock()
        if now - self._samples[-1][0] >= SAMPLE_SPACING_S:
            # The counters as they were just before now: an idle gap before this record is then
            # known exactly (the counters did not move during it).
            self._samples.append((now, self.messages, self.bytes))
        self.messages += messages
        self.bytes += size
        self._last_record = now

    def rate(self, window_s: float = DEFAULT_WINDOW_S) -> Rate:
        """The rate over the last ``window_s`` seconds (since creation if younger)."""
        now = self._clock()
        if now - self._last_record >= window_s:
            return ZERO
        samples = self._samples
        horizon = now - window_s
        i = len(samples) - 1
        while i > 0 and samples[i][0] > horizon:
            i -= 1  # i: the newest sample at or before the horizon (or the oldest kept)
        start, m0, b0 = samples[i]
        base_messages, base_bytes = float(m0), float(b0)
        if start < horizon and i + 1 < len(samples):
            # The counters at the horizon, between the two samples around it.
            t1, m1, b1 = samples[i + 1]
            share = (horizon - start) / (t1 - start)
            base_messages += (m1 - m0) * share
            base_bytes += (b1 - b0) * share
            start = horizon
        elapsed = now - start
        if elapsed <= 0:
            return ZERO
        return Rate((self.messages - base_messages) / elapsed, (self.bytes - base_bytes) / elapsed)
