"""The settings object of ``magnetar standalone`` (pydantic-settings, env prefix
``MAGNETAR_STANDALONE_``).

The standalone is a broker and one bookie in one process, so its settings are the broker's
(:class:`~magnetar.broker.settings.BrokerSettings`) and the bookie's journal and storage
settings (:class:`~magnetar.bookie.settings.BookieStorageSettings`) under one prefix, with
E=Wq=Aq=1 managed ledgers and all state under ``data_dir`` (the bookie's journal and ledger
storage may be moved elsewhere with ``journal_dir`` / ``ledger_dir``). Built once by ``magnetar
standalone`` from its flags over the environment, then passed down to
:func:`magnetar.standalone.process.serve_standalone`.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator
from pydantic_settings import SettingsConfigDict

from magnetar.bookie.config import BookieConfig
from magnetar.bookie.settings import BookieStorageSettings
from magnetar.broker.settings import BrokerSettings


class StandaloneSettings(BrokerSettings, BookieStorageSettings):
    """Broker + one bookie + RocksDB metadata in one process, all state under ``data_dir``;
    the bookie's journal and storage settings are :class:`BookieStorageSettings`'."""

    model_config = SettingsConfigDict(env_prefix="MAGNETAR_STANDALONE_", frozen=True)

    data_dir: Path = Path("data")
    managed_ledger_default_ensemble_size: int = Field(default=1, ge=1)
    managed_ledger_default_write_quorum: int = Field(default=1, ge=1)
    managed_ledger_default_ack_quorum: int = Field(default=1, ge=1)

    @model_validator(mode="after")
    def _check_layout(self) -> StandaloneSettings:
        self.bookie_storage_config()  # raises ValueError naming what is wrong
        return self

    def bookie_storage_config(self) -> BookieConfig:
        """The in-process bookie's config: its storage under ``bookie_dir`` unless
        ``journal_dir`` / ``ledger_dir`` say otherwise (never inside the metadata dir)."""
        return self.storage_config(self.bookie_dir, (("metadata", self.metadata_dir),))

    @property
    def metadata_dir(self) -> Path:
        return self.data_dir.absolute() / "metadata"

    @property
    def bookie_dir(self) -> Path:
        return self.data_dir.absolute() / "bookie"
