"""The event-loop lag probe: a stalled loop shows up as lag; a stopped probe records nothing."""

from __future__ import annotations

import asyncio
import time

import pytest

from magnetar.telemetry.loop_lag import LoopLagProbe


class Recorded:
    """Keeps what was recorded; :meth:`reached` waits (bounded) until there are ``n`` values."""

    def __init__(self) -> None:
        self.values: list[float] = []
        self._changed = asyncio.Event()

    def record(self, amount: float) -> None:
        self.values.append(amount)
        self._changed.set()

    async def reached(self, n: int) -> None:
        async with asyncio.timeout(10):
            while len(self.values) < n:
                self._changed.clear()
                await self._changed.wait()


async def test_a_stalled_loop_is_recorded_as_at_least_the_stall() -> None:
    recorded = Recorded()
    probe = LoopLagProbe(recorded, interval_s=0.01)
    probe.start()
    # A callback that holds the loop for 60 ms: the timer due 10 ms after the start cannot run.
    asyncio.get_running_loop().call_soon(time.sleep, 0.06)
    await recorded.reached(1)
    probe.stop()
    # It ran no earlier than the stall ended, 50 ms or more after it was due.
    assert recorded.values[0] >= 0.05


async def test_stop_ends_the_timers_and_start_resumes_them() -> None:
    recorded = Recorded()
    probe = LoopLagProbe(recorded, interval_s=0.005)
    probe.start()
    await recorded.reached(2)
    probe.stop()
    count = len(recorded.values)
    await asyncio.sleep(0.05)  # ten intervals: a running probe would have recorded
    assert len(recorded.values) == count
    probe.start()
    await recorded.reached(count + 1)
    probe.stop()
    assert all(value >= 0 for value in recorded.values)


def test_interval_must_be_positive() -> None:
    with pytest.raises(ValueError, match="interval_s"):
        LoopLagProbe(Recorded(), interval_s=0)
