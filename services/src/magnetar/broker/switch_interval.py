"""The GIL switch interval, following the broker's load.

The journal's writer thread returns from each write and fdatasync needing the GIL while the
event loop holds it; it waits up to the switch interval. Under a light load a short interval
(``gil_switch_interval_ms``, 0.2 ms) takes that wait off every acknowledgement's path. Under a
heavy one the wait is lost in the queueing, and each forced hand-over of the GIL costs both
threads a switch: from ``gil_switch_busy_cpu`` of a core on, the broker takes the longer
``gil_switch_interval_busy_ms`` (1 ms), about 2-5 % less CPU per message at full speed and
no change to the paced publish tail (docs/benchmarks.md, "Issue 17, session 17").

:class:`SwitchIntervalPolicy` is the pure decision, with a gap between the two thresholds so
that a load at the line does not flip it every period; :func:`follow_load` is the shell that
samples the process's CPU time and sets the interval. One task on the broker's loop.
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass

from magnetar.broker.resource_usage import ResourceSampler
from magnetar.telemetry import get_logger

log = get_logger(__name__)

PERIOD_S = 1.0  # how often the load is sampled
HYSTERESIS = 0.07  # of a core: back to the light interval this far below the busy threshold


@dataclass
class SwitchIntervalPolicy:
    """Which interval a CPU share (cores, over the last period) calls for."""

    light_s: float
    busy_s: float
    busy_from: float  # the share of a core from which the busy interval applies
    busy: bool = False

    @property
    def enabled(self) -> bool:
        return self.busy_s != self.light_s

    @property
    def interval_s(self) -> float:
        return self.busy_s if self.busy else self.light_s

    def step(self, cpu_share: float) -> float | None:
        """The interval to set after a period at ``cpu_share``; None: keep the current one."""
        if not self.busy and cpu_share >= self.busy_from:
            self.busy = True
            return self.busy_s
        if self.busy and cpu_share < self.busy_from - HYSTERESIS:
            self.busy = False
            return self.light_s
        return None


async def follow_load(policy: SwitchIntervalPolicy, period_s: float = PERIOD_S) -> None:
    """Until cancelled: every ``period_s``, the process's CPU share (the load report's
    :class:`~magnetar.broker.resource_usage.ResourceSampler`) sets the interval."""
    sys.setswitchinterval(policy.interval_s)
    sampler = ResourceSampler()
    while True:
        await asyncio.sleep(period_s)
        share = sampler.cpu().usage / 100  # percent of one core -> cores
        interval = policy.step(share)
        if interval is not None:
            sys.setswitchinterval(interval)
            log.info("gil_switch_interval", interval_ms=interval * 1000, cpu_share=round(share, 2))
