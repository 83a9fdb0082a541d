"""Which ledgers of a managed ledger may be deleted: wholly consumed and outside retention.

Pulsar's ``internalTrimLedgers`` as a pure function. Walk the ledgers oldest first, never the
current (last) one; stop at the first that must stay. A ledger may go when:

1. every entry in it is at or below the slowest durable cursor's mark-delete position (with no
   durable cursor at all, every closed ledger qualifies: nobody will read it), and
2. it is outside retention: its retention time has expired (``now - closed_at > retention``)
   OR keeping it would exceed the retention size (Pulsar's rule: either limit suffices).
   A negative retention means infinite; 0 means acknowledged data is not retained.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from magnetar.ids import LedgerId
from magnetar.managed_ledger.position import Position


@dataclass(frozen=True, slots=True)
class LedgerInfo:
    """One ledger of the chain as recorded in ManagedLedgerInfo (Pulsar's LedgerInfo)."""

    ledger_id: LedgerId
    entries: int = 0
    size: int = 0
    timestamp_ms: int = 0  # when closed; 0 while open


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    time_s: float = 0.0
    size_bytes: int = 0


def fully_consumed(info: LedgerInfo, slowest_mark_delete: Position | None) -> bool:
    if slowest_mark_delete is None:
        return True
    if info.ledger_id < slowest_mark_delete.ledger_id:
        return True
    return (
        info.ledger_id == slowest_mark_delete.ledger_id
        and slowest_mark_delete.entry_id >= info.entries - 1
    )


def ledgers_to_trim(
    ledgers: Sequence[LedgerInfo],
    slowest_mark_delete: Position | None,
    retention: RetentionPolicy,
    now_ms: int,
) -> list[LedgerId]:
    """Ids of the ledgers to delete, oldest first; ``ledgers[-1]`` (current) is never among them."""
    total_size = sum(info.size for info in ledgers)
    size_to_delete = 0
    out: list[LedgerId] = []
    for info in ledgers[:-1]:
        if not fully_consumed(info, slowest_mark_delete):
            break
        expired = retention.time_s >= 0 and (
            retention.time_s == 0 or now_ms - info.timestamp_ms > retention.time_s * 1000
        )
        over_quota = (
            retention.size_bytes >= 0 and total_size - size_to_delete > retention.size_bytes
        )
        if not (expired or over_quota):
            break
        out.append(info.ledger_id)
        size_to_delete += info.size
    return out
