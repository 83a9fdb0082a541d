"""This process's CPU and memory, as the load report states them (Pulsar's SystemResourceUsage).

- CPU: the process's user plus system time (``os.times``) spent since the previous sample,
  divided by the wall time between the two samples, in percent where one core is 100; the
  limit is ``100 * os.cpu_count()``. The first sample covers the time since the sampler was
  made.
- Memory: the resident set size in MB (``/proc/self/statm``; where there is no ``/proc``, the
  peak RSS from ``resource.getrusage``); the limit is the machine's physical memory in MB.

Reads a few bytes from ``/proc`` per sample, cheap enough for the event loop. Who calls: the
load reporter (:mod:`.load_reporter`), once per report, on the broker's loop. The clocks are
injectable for tests.
"""

from __future__ import annotations

import os
import resource
import sys
import time
from collections.abc import Callable

from magnetar.broker.load_report import ResourceUsage

MB = 1024 * 1024


def _cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


def _page_size() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return 4096


def rss_mb() -> float:
    """The process's resident set size now, in MB."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _page_size() / MB
    except (OSError, IndexError, ValueError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / MB if sys.platform == "darwin" else peak / 1024  # bytes vs KB


def physical_memory_mb() -> float:
    try:
        return os.sysconf("SC_PHYS_PAGES") * _page_size() / MB
    except (ValueError, OSError):
        return 0.0


class ResourceSampler:
    """CPU since the previous sample, memory now (see the module docstring)."""

    def __init__(
        self,
        cpu_seconds: Callable[[], float] = _cpu_seconds,
        clock: Callable[[], float] = time.monotonic,
        cores: int | None = None,
    ) -> None:
        self._cpu_seconds = cpu_seconds
        self._clock = clock
        self._cores = cores or os.cpu_count() or 1
        self._last = (clock(), cpu_seconds())

    def cpu(self) -> ResourceUsage:
        now, used = self._clock(), self._cpu_seconds()
        then, used_then = self._last
        self._last = (now, used)
        elapsed = now - then
        percent = 100.0 * (used - used_then) / elapsed if elapsed > 0 else 0.0
        return ResourceUsage(max(percent, 0.0), 100.0 * self._cores)

    def memory(self) -> ResourceUsage:
        return ResourceUsage(rss_mb(), physical_memory_mb())
