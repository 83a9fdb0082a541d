"""Autorecovery: the auditor (finds under-replicated ledgers) and replication workers (copy
their fragments to other bookies), plus bookie administration (list, decommission).

Entry point ``magnetar autorecovery`` (:mod:`.process`). Depends on ``ledger`` and ``metadata``
only (an import contract keeps it apart from the broker and the bookie service). The decisions
are pure (:mod:`.fragments`, :mod:`.decommission`); marks live in the metadata store
(:mod:`.marks`, one key per ledger).
"""

from magnetar.autorecovery.bookie_admin import BookieAdmin, BookieView
from magnetar.autorecovery.decommission import (
    DecommissionState,
    DecommissionStatus,
    decommission_status,
)
from magnetar.autorecovery.errors import (
    AutorecoveryError,
    NotDecommissioning,
    ReplicationFailed,
    UnknownBookie,
)
from magnetar.autorecovery.marks import UnderReplicationMark, UnderReplicationMarks

__all__ = [
    "AutorecoveryError",
    "BookieAdmin",
    "BookieView",
    "DecommissionState",
    "DecommissionStatus",
    "NotDecommissioning",
    "ReplicationFailed",
    "UnderReplicationMark",
    "UnderReplicationMarks",
    "UnknownBookie",
    "decommission_status",
]
