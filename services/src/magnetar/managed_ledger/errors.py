"""Errors of the managed ledger (Pulsar's ``ManagedLedgerException`` family).

``retryable`` says whether the same call may succeed later without any other change.
Errors of the layers below (``magnetar.ledger.errors``, ``magnetar.metadata.errors``) pass
through unchanged except where they mean something at this level: a ``BadVersion`` on the
managed ledger's or a cursor's info, or a ``LedgerFenced`` on the current ledger, means another
owner took the managed ledger over, and becomes :class:`ManagedLedgerFenced`.
"""

from __future__ import annotations

from magnetar.errors import MagnetarError


class ManagedLedgerError(MagnetarError):
    """Base class of managed ledger errors."""


class ManagedLedgerFenced(ManagedLedgerError):
    """Another owner changed this managed ledger (or a cursor) under us: stop serving it."""

    def __init__(self, name: str, detail: str = "") -> None:
        msg = f"managed ledger {name!r} was fenced by another owner"
        super().__init__(f"{msg}: {detail}" if detail else msg)
        self.name = name


class ManagedLedgerClosed(ManagedLedgerError):
    """The managed ledger (or its factory) is closed: no more operations."""

    def __init__(self, name: str) -> None:
        super().__init__(f"managed ledger {name!r} is closed")
        self.name = name


class ManagedLedgerNotFound(ManagedLedgerError):
    """No managed ledger of that name exists (on delete, or open with create_if_missing=False)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"managed ledger {name!r} does not exist")
        self.name = name


class ManagedLedgerTerminated(ManagedLedgerError):
    """The managed ledger was terminated: it takes no more entries."""

    def __init__(self, name: str) -> None:
        super().__init__(f"managed ledger {name!r} is terminated")
        self.name = name


class CursorNotFound(ManagedLedgerError):
    """No cursor of that name on this managed ledger."""

    def __init__(self, name: str, cursor: str) -> None:
        super().__init__(f"managed ledger {name!r} has no cursor {cursor!r}")
        self.name = name
        self.cursor = cursor


class CursorClosed(ManagedLedgerError):
    """The cursor was deleted or its managed ledger closed."""

    def __init__(self, name: str, cursor: str) -> None:
        super().__init__(f"cursor {cursor!r} of managed ledger {name!r} is closed")
        self.name = name
        self.cursor = cursor


class InvalidPosition(ManagedLedgerError):
    """A position beyond the last confirmed entry (or otherwise not usable) was given."""

    def __init__(self, position: object, detail: str = "") -> None:
        msg = f"invalid position {position}"
        super().__init__(f"{msg}: {detail}" if detail else msg)
        self.position = position


class NoMoreEntries(ManagedLedgerError):
    """A read found nothing at or after the requested position."""

    def __init__(self, position: object) -> None:
        super().__init__(f"no entries at or after {position}")
        self.position = position


class TooManyPendingAdds(ManagedLedgerError):
    """The bound on in-flight adds was reached and the caller asked not to wait."""

    retryable = True


class CorruptInfo(ManagedLedgerError):
    """Persisted managed-ledger or cursor info could not be decoded or breaks an invariant."""

    def __init__(self, key: str, detail: str) -> None:
        super().__init__(f"corrupt info at {key!r}: {detail}")
        self.key = key
