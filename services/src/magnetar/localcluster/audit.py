"""The under-replicated ledgers of a local cluster, from what its metadata store holds.

Until autorecovery's auditor runs, ``magnetar cluster status`` makes the auditor's first check
itself: every ledger's metadata (``keys.LEDGER_META_PREFIX``) and the available bookies
(``keys.BOOKIE_AVAILABLE_PREFIX``, ephemeral: a bookie killed without a clean stop is still
counted available until its lease runs out) go to the pure
:func:`magnetar.ledger.replication.under_replicated`. A ledger whose metadata cannot be decoded
is left out (no bookie of it is known).

Pure: :mod:`magnetar.localcluster.cluster_metadata` reads the keys (one store session for the
whole status) and calls :func:`find_under_replicated`; callable from any thread.
"""

from __future__ import annotations

from collections.abc import Iterable

from magnetar.ledger.errors import InvalidLedgerConfig
from magnetar.ledger.metadata import LedgerMetadataView
from magnetar.ledger.replication import UnderReplicatedLedger, under_replicated
from magnetar.metadata import keys


def find_under_replicated(
    bookie_keys: Iterable[str], ledger_entries: Iterable[tuple[str, bytes]]
) -> list[UnderReplicatedLedger]:
    """The under-replicated ledgers, given the bookies' availability keys and the ledgers'
    (metadata key, value) pairs."""
    available = frozenset(keys.bookie_id_of(key) for key in bookie_keys)
    decoded = []
    for key, value in ledger_entries:
        try:
            decoded.append((keys.ledger_id_of(key), LedgerMetadataView.decode(value)))
        except (ValueError, InvalidLedgerConfig):
            continue
    return under_replicated(decoded, available)
