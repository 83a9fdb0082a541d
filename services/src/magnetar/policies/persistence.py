"""``PersistencePolicies``: how a namespace's ledgers are replicated, as Pulsar's admin API has it.

The body of ``/admin/v2/namespaces/{tenant}/{namespace}/persistence`` and the ``persistence``
part of a namespace's ``Policies``: the BookKeeper ensemble size (E, the bookies a ledger is
striped over), write quorum (Wq, the copies of each entry) and ack quorum (Aq, the copies
that must be durable before a publish is acknowledged), plus the mark-delete rate limit of the
namespace's cursors. JSON field names are Pulsar's (``bookkeeperEnsemble``,
``bookkeeperWriteQuorum``, ``bookkeeperAckQuorum``, ``managedLedgerMaxMarkDeleteRate``).

``from_json`` checks what holds whatever the broker: each of E, Wq, Aq an integer >= 1 and
E >= Wq >= Aq, with Pulsar's messages. The upper bounds (``managedLedgerMaxEnsembleSize``,
...) are broker settings and are checked by the broker (:mod:`magnetar.broker.policy_defaults`).
Used by the broker, the admin API, the admin client and the operator. Pure value; safe from any
task.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from magnetar.policies.errors import InvalidPolicies
from magnetar.policies.fields import obj

_QUORUMS = (
    ("bookkeeperEnsemble", "Bookkeeper-Ensemble"),
    ("bookkeeperWriteQuorum", "Bookkeeper-WriteQuorum"),
    ("bookkeeperAckQuorum", "Bookkeeper-AckQuorum"),
)


@dataclass(frozen=True, slots=True)
class PersistencePolicies:
    """E / Wq / Aq of new ledgers, and mark-delete operations per second per cursor (0: no
    limit)."""

    bookkeeper_ensemble: int
    bookkeeper_write_quorum: int
    bookkeeper_ack_quorum: int
    managed_ledger_max_mark_delete_rate: float = 0.0

    def __post_init__(self) -> None:
        e, w, a = self.bookkeeper_ensemble, self.bookkeeper_write_quorum, self.bookkeeper_ack_quorum
        for (_, label), value in zip(_QUORUMS, (e, w, a), strict=True):
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidPolicies(f"{label} must be an integer")
            if value < 1:
                raise InvalidPolicies(f"{label} must be > 0, got {value}")
        if not e >= w >= a:
            raise InvalidPolicies(
                f"Bookkeeper Ensemble ({e}) >= WriteQuorum ({w}) >= AckQuorum ({a})"
            )
        rate = self.managed_ledger_max_mark_delete_rate
        if isinstance(rate, bool) or not isinstance(rate, int | float):
            raise InvalidPolicies("managedLedgerMaxMarkDeleteRate must be a number")
        if not math.isfinite(rate) or rate < 0:
            raise InvalidPolicies(f"managedLedgerMaxMarkDeleteRate must be >= 0, got {rate}")

    def to_json(self) -> dict[str, Any]:
        return {
            "bookkeeperEnsemble": self.bookkeeper_ensemble,
            "bookkeeperWriteQuorum": self.bookkeeper_write_quorum,
            "bookkeeperAckQuorum": self.bookkeeper_ack_quorum,
            "managedLedgerMaxMarkDeleteRate": float(self.managed_ledger_max_mark_delete_rate),
        }

    @classmethod
    def from_json(cls, value: object) -> PersistencePolicies:
        """Read a JSON body; a missing quorum is 0, as in Pulsar, and so refused."""
        doc = obj(value, "PersistencePolicies")
        e, w, a = (doc.get(key, 0) for key, _ in _QUORUMS)
        return cls(e, w, a, doc.get("managedLedgerMaxMarkDeleteRate", 0.0))
