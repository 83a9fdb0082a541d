"""The autorecovery process's metrics, on its :class:`~magnetar.telemetry.metrics.Metrics`.

Counters come from :class:`~.replicator.ReplicationStats`; the under-replicated ledger count is
the number of marks in the metadata store, listed before each scrape (one prefix listing).
Called once by the process entry point, on the loop.
"""

from __future__ import annotations

import asyncio

from magnetar.autorecovery.auditor import Auditor
from magnetar.autorecovery.marks import UnderReplicationMarks
from magnetar.autorecovery.replicator import ReplicationStats
from magnetar.metadata import MetadataError, MetadataStore
from magnetar.telemetry import metric_names as names
from magnetar.telemetry.metrics import Metrics, Sample

_CALL_TIMEOUT_S = 5.0


def observe_autorecovery(
    metrics: Metrics, store: MetadataStore, auditor: Auditor, stats: ReplicationStats
) -> None:
    marks = UnderReplicationMarks(store)
    under_replicated = 0

    async def count_marks() -> None:
        nonlocal under_replicated
        try:
            async with asyncio.timeout(_CALL_TIMEOUT_S):
                under_replicated = await marks.count()
        except (MetadataError, TimeoutError):
            pass  # keep the last count: a scrape must not fail on a slow store

    metrics.add_refresh(count_marks)
    metrics.observe(names.AUTORECOVERY_UNDER_REPLICATED_LEDGERS, lambda: [Sample(under_replicated)])
    metrics.observe(names.AUTORECOVERY_REREPLICATED_BYTES, lambda: [Sample(stats.bytes_copied)])
    metrics.observe(names.AUTORECOVERY_REREPLICATED_ENTRIES, lambda: [Sample(stats.entries_copied)])
    metrics.observe(
        names.AUTORECOVERY_REREPLICATED_LEDGERS, lambda: [Sample(stats.ledgers_repaired)]
    )
    metrics.observe(
        names.AUTORECOVERY_FRAGMENTS_IN_PROGRESS, lambda: [Sample(stats.fragments_in_progress)]
    )
    metrics.observe(
        names.AUTORECOVERY_AUDITOR_LEADER, lambda: [Sample(1 if auditor.is_leader else 0)]
    )
