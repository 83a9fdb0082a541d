"""Namespace persistence (E / Wq / Aq) -> a topic's managed ledger, and the broker's bounds on it.

Pulsar's path: ``validatePersistencePolicies`` refuses a policy above the broker's
``managedLedgerMaxEnsembleSize`` / ``managedLedgerMaxWriteQuorum`` / ``managedLedgerMaxAckQuorum``
(:func:`check_persistence`; the shape itself, E >= Wq >= Aq >= 1, is checked by
:class:`~magnetar.policies.PersistencePolicies`). Like Pulsar, the number of bookies available
now is not checked: bookies come and go, and a ledger that cannot get an ensemble fails when it
is created, with the managed ledger's error reaching the producer.

A topic's ``ManagedLedgerConfig`` carries the namespace's effective ensemble and quorums
(:func:`with_persistence`: the policy, else the broker's ``managedLedgerDefault*``) from its
load, and :func:`apply_persistence` puts a changed policy into the config of a loaded topic
(Pulsar's ``checkPersistencePolicies`` -> ``ManagedLedger.setConfig``): the ledger being
written is not touched; the next one (rollover, or the next load) is created with the new
settings. ``managedLedgerMaxMarkDeleteRate`` is stored and returned but not applied (every
mark-delete is persisted, coalesced by the cursor).

Pure functions but :func:`apply_persistence`, which runs on the broker's loop.
"""

from __future__ import annotations

from dataclasses import replace

from magnetar.broker.policy_defaults import BrokerPolicyDefaults
from magnetar.managed_ledger import ManagedLedger, ManagedLedgerConfig
from magnetar.policies import InvalidPolicies, PersistencePolicies
from magnetar.telemetry import get_logger

log = get_logger(__name__)


def check_persistence(
    persistence: PersistencePolicies, defaults: BrokerPolicyDefaults
) -> PersistencePolicies:
    """``persistence`` if within the broker's maxima; else InvalidPolicies with Pulsar's reason."""
    for label, value, maximum in (
        ("Bookkeeper-Ensemble", persistence.bookkeeper_ensemble, defaults.max_ensemble_size),
        ("Bookkeeper-WriteQuorum", persistence.bookkeeper_write_quorum, defaults.max_write_quorum),
        ("Bookkeeper-AckQuorum", persistence.bookkeeper_ack_quorum, defaults.max_ack_quorum),
    ):
        if value > maximum:
            raise InvalidPolicies(f"{label} must be <= {maximum} and > 0.")
    return persistence


def with_persistence(
    config: ManagedLedgerConfig,
    persistence: PersistencePolicies | None,
    default: ManagedLedgerConfig,
) -> ManagedLedgerConfig:
    """``config`` with the ensemble and quorums of ``persistence``, or of ``default`` (the
    broker's configuration) when the namespace has no persistence policy."""
    if persistence is None:
        e, w, a = default.ensemble_size, default.write_quorum, default.ack_quorum
    else:
        e = persistence.bookkeeper_ensemble
        w = persistence.bookkeeper_write_quorum
        a = persistence.bookkeeper_ack_quorum
    return replace(config, ensemble_size=e, write_quorum=w, ack_quorum=a)


def apply_persistence(
    ml: ManagedLedger, persistence: PersistencePolicies | None, default: ManagedLedgerConfig
) -> bool:
    """Give ``ml`` this persistence for its next ledgers (if it differs); True if it changed."""
    config = with_persistence(ml.config, persistence, default)
    if config == ml.config:
        return False
    ml.config = config
    log.info(
        "persistence_applied",
        managed_ledger=ml.name,
        ensemble_size=config.ensemble_size,
        write_quorum=config.write_quorum,
        ack_quorum=config.ack_quorum,
    )
    return True
