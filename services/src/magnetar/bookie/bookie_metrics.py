"""A bookie's metrics: its counters (:mod:`.bookie_stats`) and state as Prometheus samples.

:func:`observe_bookie` registers, on the process's :class:`~magnetar.telemetry.metrics.Metrics`,
one observable instrument per bookie metric of :mod:`magnetar.telemetry.metric_names`, and puts
the journal sync latency histogram in place. Counters are read at scrape time; the ledger
directory's size is measured before each scrape in the default executor (a directory walk is
blocking I/O), never on the loop.

Who calls it: the process wiring that owns the bookie (``magnetar bookie``'s server, the
standalone), once, after :meth:`~magnetar.bookie.bookie.Bookie.open`, on the event loop.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from magnetar.bookie.bookie import Bookie
from magnetar.telemetry import metric_names as names
from magnetar.telemetry.metrics import Metrics, Sample


def directory_size(path: Path) -> int:
    """Blocking: the bytes of the regular files under ``path`` (0 if it is gone)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name)).st_size
            except FileNotFoundError:
                continue  # removed while walking (compaction, RocksDB)
    return total


def observe_bookie(metrics: Metrics, bookie: Bookie) -> None:
    """Export ``bookie``'s metrics on ``metrics`` (see the module docstring)."""
    stats = bookie.stats
    ledger_dir = bookie.config.ledger_dir
    storage_size = 0

    async def measure_storage() -> None:
        nonlocal storage_size
        loop = asyncio.get_running_loop()
        storage_size = await loop.run_in_executor(None, directory_size, ledger_dir)

    stats.journal.sync_latency = metrics.histogram(names.BOOKIE_JOURNAL_SYNC_LATENCY)
    if bookie.config.journal.stage_metrics:
        stats.journal.queue_wait = metrics.histogram(names.BOOKIE_JOURNAL_QUEUE_WAIT)
        stats.journal.apply_latency = metrics.histogram(names.BOOKIE_JOURNAL_APPLY_LATENCY)
        stats.journal.handback_latency = metrics.histogram(names.BOOKIE_JOURNAL_HANDBACK_LATENCY)
    metrics.add_refresh(measure_storage)
    metrics.observe(names.BOOKIE_JOURNAL_ADD_ENTRIES, lambda: [Sample(stats.entries_added)])
    metrics.observe(names.BOOKIE_JOURNAL_SYNCS, lambda: [Sample(stats.journal.syncs)])
    metrics.observe(
        names.BOOKIE_JOURNAL_WRITTEN_BYTES, lambda: [Sample(stats.journal.written_bytes)]
    )
    metrics.observe(names.BOOKIE_READ_ENTRIES, lambda: [Sample(stats.entries_read)])
    metrics.observe(names.BOOKIE_LEDGERS, lambda: [Sample(bookie.ledger_count)])
    metrics.observe(names.BOOKIE_LEDGER_STORAGE_SIZE, lambda: [Sample(storage_size)])
    metrics.observe(names.BOOKIE_READ_ONLY, lambda: [Sample(1 if bookie.read_only else 0)])
