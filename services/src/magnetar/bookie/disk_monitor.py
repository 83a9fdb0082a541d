"""The bookie's disk monitor: free-space checks and the read-only mode they switch.

BookKeeper's LedgerDirsMonitor in small. :class:`DiskMonitor` is pure: it is given each
measurement (:meth:`DiskMonitor.observe`) and decides whether the disk is low, with
hysteresis: low once the free share drops below ``min_free_fraction``, writable again only at
``min_free_fraction + writable_margin_fraction`` or more, so a disk hovering at the threshold
does not flap. It also remembers the mode last announced and tells the mode listeners
(:meth:`DiskMonitor.announce`) only when the bookie's mode changes, whatever changed it (the
disk, or the journal failing).

Invariants: listeners hear each change once, in order, and never a mode equal to the last one
announced; the first announcement is measured against the forced read-only setting.

Who calls it: the bookie core (:mod:`magnetar.bookie.bookie`) on the event loop, from its
disk-check loop and once at open; the measurement itself (:func:`disk_usage`, a ``statvfs``)
runs in the default executor.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from magnetar.telemetry import get_logger

log = get_logger(__name__)


@dataclass(frozen=True, slots=True)
class DiskUsage:
    free_bytes: int
    total_bytes: int


def disk_usage(path: Path) -> DiskUsage:
    """Blocking: the free and total bytes of the file system holding ``path``."""
    usage = shutil.disk_usage(path)
    return DiskUsage(free_bytes=usage.free, total_bytes=usage.total)


class DiskMonitor:
    """See the module docstring."""

    def __init__(
        self, min_free_fraction: float, writable_margin_fraction: float, announced: bool
    ) -> None:
        self._min_free = min_free_fraction
        self._margin = writable_margin_fraction
        self._announced = announced
        self._listeners: list[Callable[[bool], None]] = []
        self.low = False
        """The free share fell below the threshold and has not recovered past the margin."""
        self.usage = DiskUsage(0, 0)
        """The last measurement (zeros before the first)."""

    def add_listener(self, listener: Callable[[bool], None]) -> None:
        self._listeners.append(listener)

    def observe(self, usage: DiskUsage) -> None:
        """Record a measurement; switch :attr:`low` on or off (with hysteresis)."""
        self.usage = usage
        fraction = usage.free_bytes / usage.total_bytes if usage.total_bytes else 1.0
        if not self.low and fraction < self._min_free:
            self.low = True
            log.warning("bookie_disk_low_read_only", free_fraction=round(fraction, 4))
        elif self.low and fraction >= self._min_free + self._margin:
            self.low = False
            log.info("bookie_disk_freed_writable", free_fraction=round(fraction, 4))

    def announce(self, read_only: bool) -> None:
        """Tell the listeners ``read_only`` if it differs from what they last heard."""
        if read_only != self._announced:
            self._announced = read_only
            for listener in self._listeners:
                listener(read_only)
