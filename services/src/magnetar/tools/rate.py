"""Pacing for rate-limited load: when may the n-th message go?

:class:`RateSchedule` is the sans-I/O core: message ``n`` (0-based) is due at
``start + n / rate``. A sender that falls behind does not burst to catch up by more than
``max_burst`` messages: the schedule slides forward instead, so a stall is reported as lost
throughput, not hidden by a burst. The perf tools time latency from the actual send call, not
from :meth:`RateSchedule.intended_time`, so time a message spent waiting behind a stalled
sender is not in its latency (no "coordinated omission" correction).

:class:`Pacer` wraps it for asyncio: ``await pacer.wait()`` before each send. It sleeps only
when ahead by more than a millisecond, so high rates do not cost a timer per message.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class RateSchedule:
    """Due times for messages at ``rate`` per second starting at ``start`` (seconds)."""

    rate: float
    start: float
    max_burst: int = 1000
    _sent: int = 0
    _origin: float = field(init=False)

    def __post_init__(self) -> None:
        if self.rate <= 0:
            raise ValueError(f"rate must be > 0 messages per second, got {self.rate}")
        if self.max_burst < 1:
            raise ValueError(f"max_burst must be >= 1, got {self.max_burst}")
        self._origin = self.start

    def intended_time(self) -> float:
        """When the next message is due."""
        return self._origin + self._sent / self.rate

    def delay(self, now: float) -> float:
        """Seconds to wait before the next message (0 when due); slides if too far behind."""
        due = self.intended_time()
        behind = (now - due) * self.rate  # messages overdue beyond the one due now
        if behind > self.max_burst - 1:
            self._origin += (behind - (self.max_burst - 1)) / self.rate
            due = self.intended_time()
        return max(0.0, due - now)

    def sent(self, n: int = 1) -> None:
        self._sent += n


class Pacer:
    """``await wait()`` before each message to hold ``rate`` messages/s; None = no limit."""

    def __init__(self, rate: float | None, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._schedule = None if rate is None else RateSchedule(rate, clock())

    async def wait(self) -> None:
        if self._schedule is None:
            return
        delay = self._schedule.delay(self._clock())
        if delay > 0.001:
            await asyncio.sleep(delay)
        self._schedule.sent()
