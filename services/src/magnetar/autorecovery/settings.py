"""The autorecovery process's one settings object (pydantic-settings, env prefix
``MAGNETAR_AUTORECOVERY_``).

Built once by ``magnetar autorecovery`` from its flags over the environment, then passed down.
Names follow BookKeeper's bk_server.conf where a BookKeeper operator would look:
``lostBookieRecoveryDelay`` -> ``lost_bookie_recovery_delay`` (seconds),
``auditorPeriodicCheckInterval`` -> ``audit_period`` (seconds), ``httpServerPort`` ->
``http_server_port``.
"""

from __future__ import annotations

import uuid

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from magnetar.authentication.settings import BookkeeperClientAuthenticationSettings
from magnetar.tls.settings import BookkeeperClientTlsSettings, MetadataStoreTlsSettings


class AutorecoverySettings(
    BookkeeperClientTlsSettings, MetadataStoreTlsSettings, BookkeeperClientAuthenticationSettings
):
    model_config = SettingsConfigDict(env_prefix="MAGNETAR_AUTORECOVERY_", frozen=True)

    metadata_url: str
    # /metrics and the health endpoints.
    http_server_port: int = Field(default=8000, ge=0, le=65535)
    bind_address: str = "127.0.0.1"
    # Seconds a bookie must stay gone before its ledgers are marked (0: at once).
    lost_bookie_recovery_delay: float = Field(default=0.0, ge=0)
    # Seconds between full checks (every ledger, every live bookie's entry ranges).
    audit_period: float = Field(default=600.0, gt=0)
    # How often the auditor looks at lost bookies and decommissions between full checks.
    auditor_tick_s: float = Field(default=1.0, gt=0)
    # How often a worker lists the marks.
    replication_poll_s: float = Field(default=1.0, gt=0)
    # Entries read or written at once while copying one ledger.
    rereplication_concurrency: int = Field(default=64, ge=1, le=4096)
    # The id logged and shown as the auditor (default: random).
    autorecovery_id: str = Field(default_factory=lambda: f"autorecovery-{uuid.uuid4().hex[:8]}")
    session_timeout_s: float = Field(default=10.0, gt=0)
    bookie_timeout_s: float = Field(default=10.0, gt=0)  # every bookie call
    shutdown_step_timeout_s: float = Field(default=10.0, gt=0)
    log_level: str = "info"
    log_json: bool = False
