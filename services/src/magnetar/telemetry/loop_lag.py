"""How late the event loop runs what is due: ``magnetar_event_loop_lag_seconds``.

Every message a broker handles waits for its turn on the one event loop, so a loop that is busy
or stalled (a long callback, a cyclic-GC pass, the GIL held by another thread, no free core)
delays every publish and dispatch by that much. :class:`LoopLagProbe` asks the loop to run a
timer every ``interval_s`` and records how late each one ran into a histogram: the publish-latency
tail can then be read against it (docs/benchmarks.md, "Issue 17, first steps").

Cost: one timer callback per interval (20 a second by default), no task. The chain of timers
ends with :meth:`LoopLagProbe.stop` or with the loop itself. The lag is read on the loop's own
clock (``loop.time()``), which on uvloop's loop has a resolution of one millisecond.

Concurrency: start and stop it on the loop it measures.
"""

from __future__ import annotations

import asyncio

from magnetar.telemetry.metrics import LatencyRecorder

DEFAULT_INTERVAL_S = 0.05


class LoopLagProbe:
    """Records into ``recorder``, every ``interval_s``, how late the loop ran a timer."""

    def __init__(self, recorder: LatencyRecorder, interval_s: float = DEFAULT_INTERVAL_S) -> None:
        if interval_s <= 0:
            raise ValueError("interval_s must be positive")
        self._recorder = recorder
        self._interval_s = interval_s
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None

    def start(self) -> None:
        """Start measuring the running loop (again, after a stop)."""
        self._loop = asyncio.get_running_loop()
        if self._timer is None:
            self._schedule()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _schedule(self) -> None:
        assert self._loop is not None
        due = self._loop.time() + self._interval_s
        self._timer = self._loop.call_at(due, self._tick, due)

    def _tick(self, due: float) -> None:
        assert self._loop is not None
        self._recorder.record(max(0.0, self._loop.time() - due))
        self._schedule()
