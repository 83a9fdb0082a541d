"""The BookKeeper-style ledger client: metadata, placement, striped writes, recovery, reads.

Entry point :class:`BookKeeper` (``client.py``); errors in ``errors.py``. Only
``bookie_client.py`` speaks gRPC; placement, striping, in-order confirmation and recovery
decisions are sans-I/O cores (``placement``, ``distribution``, ``pending_adds``, ``recovery``).
"""

from magnetar.ledger.client import BookKeeper
from magnetar.ledger.config import LedgerClientConfig
from magnetar.ledger.errors import (
    BookieRejected,
    BookieUnavailable,
    ClientClosed,
    DigestMismatch,
    InvalidLedgerConfig,
    LedgerClosed,
    LedgerError,
    LedgerFenced,
    NoSuchEntry,
    NoSuchLedger,
    NotEnoughBookies,
    RecoveryFailed,
)
from magnetar.ledger.metadata import LedgerMetadataView, LedgerState
from magnetar.ledger.placement import PlacementPolicy
from magnetar.ledger.read_handle import LedgerEntry, ReadHandle
from magnetar.ledger.replication import UnderReplicatedLedger, under_replicated
from magnetar.ledger.write_handle import WriteHandle

__all__ = [
    "BookKeeper",
    "BookieRejected",
    "BookieUnavailable",
    "ClientClosed",
    "DigestMismatch",
    "InvalidLedgerConfig",
    "LedgerClientConfig",
    "LedgerClosed",
    "LedgerEntry",
    "LedgerError",
    "LedgerFenced",
    "LedgerMetadataView",
    "LedgerState",
    "NoSuchEntry",
    "NoSuchLedger",
    "NotEnoughBookies",
    "PlacementPolicy",
    "ReadHandle",
    "RecoveryFailed",
    "UnderReplicatedLedger",
    "WriteHandle",
    "under_replicated",
]
