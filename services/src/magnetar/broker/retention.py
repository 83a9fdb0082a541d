"""Namespace retention -> a topic's managed ledger (Pulsar's ``ManagedLedger.setConfig`` path).

The managed ledger trims (``magnetar.managed_ledger.trimming``) with the retention in its
``ManagedLedgerConfig``. The broker puts the namespace's effective retention there when a topic
loads (:func:`magnetar.broker.policy_defaults.with_retention` on the broker's default config)
and again when the policy changes (admin) or on each policy check pass (:func:`apply_retention`),
then asks for a trim so that what the new retention no longer keeps goes at once.

Concurrency: on the broker's loop; ``trim_ledgers`` serialises with the ledger's own trims.
"""

from __future__ import annotations

from magnetar.broker.policy_defaults import with_retention
from magnetar.managed_ledger import ManagedLedger
from magnetar.policies import RetentionPolicies
from magnetar.telemetry import get_logger

log = get_logger(__name__)


async def apply_retention(ml: ManagedLedger, retention: RetentionPolicies) -> bool:
    """Give ``ml`` this retention (if it differs) and trim; True if the config changed."""
    config = with_retention(ml.config, retention)
    changed = config != ml.config
    if changed:
        ml.config = config
        log.info(
            "retention_applied",
            managed_ledger=ml.name,
            retention_time_s=config.retention_time_s,
            retention_size_bytes=config.retention_size_bytes,
        )
    await ml.trim_ledgers()
    return changed
