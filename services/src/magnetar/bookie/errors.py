"""Errors of the bookie. Expected conditions on the wire are status codes, not these.

These are raised inside the bookie process (journal I/O failures, a bad cookie at start-up, a
closed bookie) and by the core to say why an operation was refused; the servicer turns the
refusals into ``Status`` codes through the one table in :mod:`magnetar.bookie.servicer`.
"""

from __future__ import annotations

from magnetar.errors import MagnetarError


class BookieError(MagnetarError):
    """Base class of bookie errors."""


class JournalFailed(BookieError):
    """A write or fsync of the journal failed: the bookie can no longer promise durability."""


class JournalClosed(BookieError):
    """The journal is closing or closed and accepts no more records."""


class BookieClosed(BookieError):
    """The bookie is shutting down."""

    retryable = True


class CookieMismatch(BookieError):
    """The data dir and the metadata disagree about who this bookie is; it must not start."""


class StorageCorrupt(BookieError):
    """Ledger storage holds a value that does not decode."""


class StorageUnavailable(BookieError):
    """Ledger storage cannot be opened (locked by another process, unreadable)."""
