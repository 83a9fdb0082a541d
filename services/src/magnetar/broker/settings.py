"""The settings objects of ``magnetar standalone`` and ``magnetar broker`` (pydantic-settings).

Built once by the command from its flags over the environment (``MAGNETAR_STANDALONE_*``,
``MAGNETAR_BROKER_*``), then passed down; no module reads the environment itself. Names follow
Pulsar's broker.conf where a Pulsar operator would look (``brokerServicePort`` ->
``broker_port``, ``advertisedAddress`` -> ``advertised_address``,
``managedLedgerDefaultEnsembleSize`` -> ``managed_ledger_default_ensemble_size``).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from magnetar.broker.service import BrokerConfig
from magnetar.managed_ledger import ManagedLedgerConfig


class BrokerSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MAGNETAR_BROKER_", frozen=True)

    metadata_url: str = "etcd://127.0.0.1:2379"
    broker_port: int = Field(default=6650, ge=0, le=65535)
    web_port: int = Field(default=8080, ge=0, le=65535)
    bind_address: str = "127.0.0.1"
    advertised_address: str = "127.0.0.1"
    cluster_name: str = "standalone"
    managed_ledger_default_ensemble_size: int = Field(default=3, ge=1)
    managed_ledger_default_write_quorum: int = Field(default=3, ge=1)
    managed_ledger_default_ack_quorum: int = Field(default=2, ge=1)
    managed_ledger_max_entries_per_ledger: int = Field(default=50_000, ge=1)
    max_message_size: int = Field(default=5 * 1024 * 1024, gt=1024)
    keep_alive_interval_s: float = Field(default=30.0, gt=0)
    session_timeout_s: float = Field(default=10.0, gt=0)
    shutdown_step_timeout_s: float = Field(default=10.0, gt=0)
    stats_update_frequency_s: float = Field(default=60.0, gt=0)  # statsUpdateFrequencyInSecs
    log_level: str = "info"
    log_json: bool = False

    def broker_config(self) -> BrokerConfig:
        return BrokerConfig(
            advertised_address=self.advertised_address,
            broker_service_port=self.broker_port,
            web_service_port=self.web_port,
            cluster_name=self.cluster_name,
            max_message_size=self.max_message_size,
            keep_alive_interval_s=self.keep_alive_interval_s,
            managed_ledger=ManagedLedgerConfig(
                ensemble_size=self.managed_ledger_default_ensemble_size,
                write_quorum=self.managed_ledger_default_write_quorum,
                ack_quorum=self.managed_ledger_default_ack_quorum,
                max_entries_per_ledger=self.managed_ledger_max_entries_per_ledger,
            ),
            close_timeout_s=self.shutdown_step_timeout_s,
            stats_window_s=self.stats_update_frequency_s,
        )


class StandaloneSettings(BrokerSettings):
    """Broker + one bookie + RocksDB metadata in one process, all state under ``data_dir``."""

    model_config = SettingsConfigDict(env_prefix="MAGNETAR_STANDALONE_", frozen=True)

    data_dir: Path = Path("data")
    journal_sync: bool = True
    managed_ledger_default_ensemble_size: int = Field(default=1, ge=1)
    managed_ledger_default_write_quorum: int = Field(default=1, ge=1)
    managed_ledger_default_ack_quorum: int = Field(default=1, ge=1)

    @property
    def metadata_dir(self) -> Path:
        return self.data_dir.absolute() / "metadata"

    @property
    def bookie_dir(self) -> Path:
        return self.data_dir.absolute() / "bookie"
