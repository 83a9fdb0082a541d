"""What ``magnetar cluster status`` reads from a local cluster's metadata store, in one session.

:func:`read_cluster_metadata` opens the store the cluster's metadata URL names (through
:mod:`magnetar.metadata`, never a broker or a bookie), lists the bundle owners, the available
bookies, the ledgers' metadata and autorecovery's under-replication marks, closes it, and
hands the keys to the pure
:func:`magnetar.localcluster.owners.parse_owners` and
:func:`magnetar.localcluster.audit.find_under_replicated`. One deadline,
:data:`READ_TIMEOUT_S`, bounds the whole read, store opening included; a store that does not
answer within it is reported as None, not as an error.

Blocking (it runs its own event loop): called by ``magnetar cluster status`` from the command's
thread, never from a running loop.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from magnetar.errors import MagnetarError
from magnetar.ledger.replication import UnderReplicatedLedger
from magnetar.localcluster.audit import find_under_replicated
from magnetar.localcluster.owners import BundleOwner, parse_owners
from magnetar.metadata import keys
from magnetar.metadata.factory import open_store

READ_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class ClusterMetadata:
    owners: list[BundleOwner]
    under_replicated: list[UnderReplicatedLedger]
    marked: int = 0  # autorecovery's under-replication marks (keys.UNDER_REPLICATED_PREFIX)


async def _read(metadata_url: str) -> ClusterMetadata:
    store = await open_store(metadata_url, session_timeout_s=READ_TIMEOUT_S)
    try:
        owners = await store.list(keys.BUNDLE_OWNERS_PREFIX)
        bookies = await store.list(keys.BOOKIE_AVAILABLE_PREFIX)
        ledgers = await store.list(keys.LEDGER_META_PREFIX)
        marked = await store.list_keys(keys.UNDER_REPLICATED_PREFIX)
    finally:
        await store.close()
    return ClusterMetadata(
        parse_owners((key, versioned.value) for key, versioned in owners),
        find_under_replicated(
            (key for key, _ in bookies), ((key, versioned.value) for key, versioned in ledgers)
        ),
        len(marked),
    )


def read_cluster_metadata(metadata_url: str) -> ClusterMetadata | None:
    """The bundle owners and under-replicated ledgers now, or None when the store does not
    answer within :data:`READ_TIMEOUT_S`."""

    async def bounded() -> ClusterMetadata:
        async with asyncio.timeout(READ_TIMEOUT_S):
            return await _read(metadata_url)

    try:
        return asyncio.run(bounded())
    except (TimeoutError, MagnetarError, OSError):
        return None
