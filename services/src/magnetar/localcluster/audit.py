"""The under-replicated ledgers of a local cluster, read from its metadata store.

Until autorecovery's auditor runs, ``magnetar cluster status`` makes the auditor's first check
itself: it lists every ledger's metadata (``keys.LEDGER_META_PREFIX``) and the available bookies
(``keys.BOOKIE_AVAILABLE_PREFIX``, ephemeral: a bookie killed without a clean stop is still
counted available until its lease runs out) and hands both to the pure
:func:`magnetar.ledger.replication.under_replicated`. A ledger whose metadata cannot be decoded
is left out (no bookie of it is known).

:func:`read_under_replicated` opens the store the cluster's metadata URL names (through
:mod:`magnetar.metadata`, never a broker or a bookie), reads under a deadline and closes it.
Blocking (it runs its own event loop): called by ``magnetar cluster status`` from the command's
thread, never from a running loop.
"""

from __future__ import annotations

import asyncio

from magnetar.errors import MagnetarError
from magnetar.ledger.errors import InvalidLedgerConfig
from magnetar.ledger.metadata import LedgerMetadataView
from magnetar.ledger.replication import UnderReplicatedLedger, under_replicated
from magnetar.metadata import keys
from magnetar.metadata.factory import open_store

READ_TIMEOUT_S = 5.0


async def _read(metadata_url: str) -> list[UnderReplicatedLedger]:
    store = await open_store(metadata_url, session_timeout_s=READ_TIMEOUT_S)
    try:
        bookies = await store.list(keys.BOOKIE_AVAILABLE_PREFIX)
        ledgers = await store.list(keys.LEDGER_META_PREFIX)
    finally:
        await store.close()
    available = frozenset(keys.bookie_id_of(key) for key, _ in bookies)
    decoded = []
    for key, versioned in ledgers:
        try:
            decoded.append((keys.ledger_id_of(key), LedgerMetadataView.decode(versioned.value)))
        except (ValueError, InvalidLedgerConfig):
            continue
    return under_replicated(decoded, available)


def read_under_replicated(metadata_url: str) -> list[UnderReplicatedLedger] | None:
    """The under-replicated ledgers now, or None when the store does not answer in time."""

    async def bounded() -> list[UnderReplicatedLedger]:
        async with asyncio.timeout(READ_TIMEOUT_S):
            return await _read(metadata_url)

    try:
        return asyncio.run(bounded())
    except (TimeoutError, MagnetarError, OSError):
        return None
