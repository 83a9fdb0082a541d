"""Decommissioning a bookie: the request record and the status computed from the metadata.

A request is ``keys.bookie_decommission(bookie_id)`` holding JSON ``{"requestedMs": N}``. Its
presence is the whole protocol: the ledger client's placement skips the bookie, the bookie turns
read-only (:mod:`magnetar.bookie.decommission`), and the auditor marks every ledger that names
it as under-replicated, so the replication workers copy its fragments elsewhere.

The status is not stored; :func:`decommission_status` computes it from what the metadata says
now (pure), so the admin API and the auditor always agree:

- ``Done`` when no ledger names the bookie any more (it holds nothing still needed);
- ``Failed`` when a segment naming it has no possible replacement: every writable bookie other
  than the ones being decommissioned is already in that segment (too few bookies remain);
  the message says which ledger, how many bookies it needs and what to do;
- ``InProgress`` otherwise, with the number of ledgers still naming it.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable, Set
from dataclasses import dataclass

from magnetar.ids import BookieId, LedgerId
from magnetar.ledger.metadata import LedgerMetadataView


class DecommissionState(enum.Enum):
    IN_PROGRESS = "InProgress"
    DONE = "Done"
    FAILED = "Failed"


@dataclass(frozen=True)
class DecommissionStatus:
    bookie_id: BookieId
    state: DecommissionState
    ledgers_remaining: int
    message: str

    def to_json(self) -> dict[str, object]:
        return {
            "bookieId": self.bookie_id,
            "state": self.state.value,
            "ledgersRemaining": self.ledgers_remaining,
            "message": self.message,
        }


def encode_request(requested_ms: int) -> bytes:
    return json.dumps({"requestedMs": requested_ms}).encode()


def decommission_status(
    bookie_id: BookieId,
    ledgers: Iterable[tuple[LedgerId, LedgerMetadataView]],
    writable: Set[BookieId],
    decommissioning: Set[BookieId],
) -> DecommissionStatus:
    """The state of ``bookie_id``'s decommission (see the module docstring).

    ``writable``: bookies that may receive copies (registered, not read-only); bookies in
    ``decommissioning`` never count among them."""
    targets = set(writable) - set(decommissioning) - {bookie_id}
    holding = [(lid, meta) for lid, meta in ledgers if bookie_id in meta.all_bookies()]
    if not holding:
        return DecommissionStatus(
            bookie_id,
            DecommissionState.DONE,
            0,
            f"Bookie {bookie_id} holds no ledger that is still needed; it can be removed",
        )
    for ledger_id, meta in holding:
        for first, bookies in meta.ensembles:
            if bookie_id in bookies and not targets - set(bookies):
                return DecommissionStatus(
                    bookie_id,
                    DecommissionState.FAILED,
                    len(holding),
                    f"Cannot move ledger {ledger_id} off bookie {bookie_id}: its ensemble "
                    f"(segment from entry {first}) needs {meta.ensemble_size} distinct bookies "
                    f"but only {len(targets)} writable bookie(s) remain besides the ones being "
                    "decommissioned; add a bookie (or cancel the decommission) and it resumes",
                )
    return DecommissionStatus(
        bookie_id,
        DecommissionState.IN_PROGRESS,
        len(holding),
        f"{len(holding)} ledger(s) still name bookie {bookie_id}; autorecovery is copying them",
    )
