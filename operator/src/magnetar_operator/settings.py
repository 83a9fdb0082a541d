"""The operator's one settings object (pydantic-settings, env prefix ``MAGNETAR_OPERATOR_``).

Built once by ``magnetar-operator`` and passed to the handlers; nothing reads the environment
elsewhere.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class OperatorSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MAGNETAR_OPERATOR_", frozen=True)

    # How long a waiting change (a roll, a decommission, a missing namespace) waits before
    # the operator looks again (kopf.TemporaryError's delay).
    retry_delay_s: float = Field(default=10.0, gt=0)
    # How often a PulsarCluster's status is recomputed from its children.
    resync_interval_s: float = Field(default=30.0, gt=0)
    # How often a Tenant, Namespace or Topic is compared with Pulsar and drift reverted.
    drift_interval_s: float = Field(default=60.0, gt=0)
    # Deadline of each admin REST call.
    admin_timeout_s: float = Field(default=10.0, gt=0)
    # Reach every PulsarCluster's brokers at this URL instead of their Service (an operator
    # running outside the cluster through a port-forward; tests).
    broker_admin_url: str | None = None
    # Kubernetes watch timeouts: the server ends a watch after this, the client gives up
    # after a little more (a silent connection is never waited on forever).
    watch_server_timeout_s: int = Field(default=300, gt=0)
    watch_client_timeout_s: int = Field(default=330, gt=0)
    # Only this Kubernetes namespace (default: every namespace).
    namespace: str | None = None
    # Port of the liveness endpoint (/healthz).
    liveness_port: int = Field(default=8080, ge=1, le=65535)
    log_level: str = "info"
