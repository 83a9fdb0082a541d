"""Errors of the ledger client (BookKeeper's ``BKException`` codes, one class per condition).

``retryable`` says whether the same call may succeed later without any other change: a bookie
that is down may come back (``BookieUnavailable``), a fenced ledger never takes writes again
(``LedgerFenced``).
"""

from __future__ import annotations

from magnetar.errors import MagnetarError


class LedgerError(MagnetarError):
    """Base class of ledger client errors."""


class InvalidLedgerConfig(LedgerError):
    """Quorum sizes or other ledger parameters are not acceptable (e.g. not 1 <= Aq <= Wq <= E)."""


class NoSuchLedger(LedgerError):
    """The ledger has no metadata: never created, or deleted."""

    def __init__(self, ledger_id: int) -> None:
        super().__init__(f"ledger {ledger_id} does not exist")
        self.ledger_id = ledger_id


class NoSuchEntry(LedgerError):
    """The entry is beyond the ledger's last entry (closed) or last-add-confirmed (open)."""

    def __init__(self, ledger_id: int, entry_id: int, detail: str = "") -> None:
        msg = f"ledger {ledger_id} has no entry {entry_id}"
        super().__init__(f"{msg}: {detail}" if detail else msg)
        self.ledger_id = ledger_id
        self.entry_id = entry_id


class LedgerClosed(LedgerError):
    """The write handle is closed (by us, or because it failed): no more appends."""

    def __init__(self, ledger_id: int, detail: str = "") -> None:
        msg = f"ledger {ledger_id} is closed for writing"
        super().__init__(f"{msg}: {detail}" if detail else msg)
        self.ledger_id = ledger_id


class LedgerFenced(LedgerError):
    """Another client fenced the ledger (recovery): this writer may not add any more entries."""

    def __init__(self, ledger_id: int) -> None:
        super().__init__(f"ledger {ledger_id} was fenced by another client (recovered)")
        self.ledger_id = ledger_id


class NotEnoughBookies(LedgerError):
    """Fewer writable bookies than the ensemble (or a replacement) needs."""

    retryable = True

    def __init__(self, needed: int, available: int) -> None:
        super().__init__(f"need {needed} writable bookies, {available} available")
        self.needed = needed
        self.available = available


class BookieUnavailable(LedgerError):
    """A bookie could not be reached, timed out, or failed the call."""

    retryable = True

    def __init__(self, bookie_id: str, reason: str) -> None:
        super().__init__(f"bookie {bookie_id!r} unavailable: {reason}")
        self.bookie_id = bookie_id
        self.reason = reason


class BookieRejected(LedgerError):
    """A bookie answered a request with an unexpected status (UNAUTHORIZED, BAD_REQUEST...)."""

    def __init__(self, bookie_id: str, status: str) -> None:
        super().__init__(f"bookie {bookie_id!r} rejected the request: {status}")
        self.bookie_id = bookie_id
        self.status = status


class DigestMismatch(LedgerError):
    """An entry read back does not match its CRC32-C digest (corrupt or wrong ledger)."""

    def __init__(self, ledger_id: int, entry_id: int, bookie_id: str = "") -> None:
        src = f" from bookie {bookie_id!r}" if bookie_id else ""
        super().__init__(f"digest mismatch on ledger {ledger_id} entry {entry_id}{src}")
        self.ledger_id = ledger_id
        self.entry_id = entry_id
        self.bookie_id = bookie_id


class RecoveryFailed(LedgerError):
    """Recovery could not decide the ledger's end (too many bookies unreachable); retry later."""

    retryable = True

    def __init__(self, ledger_id: int, detail: str) -> None:
        super().__init__(f"recovery of ledger {ledger_id} failed: {detail}")
        self.ledger_id = ledger_id


class ClientClosed(LedgerError):
    """The BookKeeper client was closed."""
