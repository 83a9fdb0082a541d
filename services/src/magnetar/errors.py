"""The root of every Magnetar exception.

Each package has its own ``errors.py`` whose classes derive from :class:`MagnetarError` and are
named for the condition (``LedgerFenced``, ``BadVersion``). ``retryable`` tells a caller whether
the same call may succeed if tried again later (after a backoff), without any other change.
Third-party exceptions are wrapped where they enter (``raise ... from exc``).
"""

from __future__ import annotations

from typing import ClassVar


class MagnetarError(Exception):
    """Base class of all Magnetar errors."""

    retryable: ClassVar[bool] = False


class Timeout(MagnetarError):
    """A remote call or wait ran past its deadline."""

    retryable = True


class Unavailable(MagnetarError):
    """A peer or server could not be reached."""

    retryable = True
