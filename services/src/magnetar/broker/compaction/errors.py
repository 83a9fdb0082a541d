"""Errors of topic compaction (their HTTP statuses are in :mod:`magnetar.admin.errors`)."""

from __future__ import annotations

from magnetar.broker.errors import BrokerError


class CompactionInProgress(BrokerError):
    """A compaction was asked for while one runs (Pulsar answers 409 Conflict)."""

    def __init__(self, topic: str) -> None:
        super().__init__(f"Compaction already in progress for {topic}")
        self.topic = topic


class CorruptCompactedEntry(BrokerError):
    """An entry of a compacted ledger that does not decode (never written by Magnetar)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"compacted ledger entry does not decode: {reason}")
