"""Settings of a managed ledger and of the factory (values; names follow Pulsar's broker.conf)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from magnetar.managed_ledger.rollover import RolloverPolicy
from magnetar.managed_ledger.trimming import RetentionPolicy


class InitialPosition(enum.Enum):
    """Where a new durable cursor starts: after the last entry, or before the first."""

    LATEST = "latest"
    EARLIEST = "earliest"


@dataclass(frozen=True, slots=True)
class ManagedLedgerConfig:
    ensemble_size: int = 3
    write_quorum: int = 3
    ack_quorum: int = 2
    max_entries_per_ledger: int = 50_000
    max_ledger_size_bytes: int = 0  # 0: no size limit
    max_ledger_age_s: float = 0.0  # 0: no age limit
    min_ledger_age_s: float = 0.0  # no rollover before this age, even when a limit is reached
    retention_time_s: float = 0.0  # negative: infinite
    retention_size_bytes: int = 0  # negative: infinite
    max_pending_adds: int = 10_000  # adds queued or in flight; more callers wait (FIFO)

    @property
    def rollover(self) -> RolloverPolicy:
        return RolloverPolicy(
            self.max_entries_per_ledger,
            self.max_ledger_size_bytes,
            self.max_ledger_age_s,
            self.min_ledger_age_s,
        )

    @property
    def retention(self) -> RetentionPolicy:
        return RetentionPolicy(self.retention_time_s, self.retention_size_bytes)


@dataclass(frozen=True, slots=True)
class ManagedLedgerFactoryConfig:
    cache_max_bytes: int = 64 * 1024 * 1024  # shared by every managed ledger's entry cache
