"""Errors of autorecovery and bookie administration (one class per condition).

``retryable`` says whether the same call may succeed later without any other change: a
fragment whose copy failed because a replica was unreachable may succeed on the next round
(:class:`ReplicationFailed`); an unknown bookie stays unknown (:class:`UnknownBookie`).
"""

from __future__ import annotations

from magnetar.errors import MagnetarError


class AutorecoveryError(MagnetarError):
    """Base class of autorecovery errors."""


class UnknownBookie(AutorecoveryError):
    """No bookie with this id ever registered in this cluster (no cookie, no registration)."""

    def __init__(self, bookie_id: str) -> None:
        super().__init__(
            f"Bookie {bookie_id} is unknown: no bookie with this id ever registered "
            "(list them with `magnetar admin bookies list`)"
        )
        self.bookie_id = bookie_id


class NotDecommissioning(AutorecoveryError):
    """A decommission status was asked for a bookie nobody asked to decommission."""

    def __init__(self, bookie_id: str) -> None:
        super().__init__(
            f"No decommission was requested for bookie {bookie_id} "
            f"(start one with POST /admin/v2/bookies/{bookie_id}/decommission)"
        )
        self.bookie_id = bookie_id


class ReplicationFailed(AutorecoveryError):
    """A fragment could not be copied now (no replica answered, no target bookie, ...)."""

    retryable = True

    def __init__(self, ledger_id: int, reason: str) -> None:
        super().__init__(f"re-replication of ledger {ledger_id} failed: {reason}")
        self.ledger_id = ledger_id
        self.reason = reason
