"""Errors of ``magnetar audit`` (one class per condition).

:class:`Unreachable` is the one that decides an exit code of its own: a bookie or a metadata
store that does not answer makes the audit's verdict unknown, never "pass". Raised in a Spark
executor it reaches the driver only as text inside Spark's own exception, so its message
carries a marker that :func:`find_unreachable` parses back out.
"""

from __future__ import annotations

import re

from magnetar.errors import MagnetarError

_MARKER = "magnetar-audit-unreachable"
_PATTERN = re.compile(rf"\[{_MARKER}\] (?P<what>[a-z ]+?) (?P<name>\S+) at (?P<address>\S+): ")


class AuditError(MagnetarError):
    """Base class of the audit's errors."""


class BadAuditInput(AuditError):
    """An option of the audit is wrong (a URL, a cluster name); the message says which."""


class Unreachable(AuditError):
    """A bookie or the metadata store did not answer: the audit cannot conclude."""

    retryable = True

    def __init__(self, what: str, name: str, address: str, reason: str) -> None:
        super().__init__(f"[{_MARKER}] {what} {name} at {address}: {reason}")
        self.what = what
        self.name = name
        self.address = address
        self.reason = reason

    def describe(self) -> str:
        """What the audit prints: which peer, where, why, and what to do."""
        where = self.address if self.name == self.address else f"{self.name} at {self.address}"
        return (
            f"cannot reach the {self.what} {where} ({self.reason}); the audit cannot conclude. "
            "Start it, or remove it from the cluster, and run again."
        )


def find_unreachable(text: str) -> Unreachable | None:
    """The :class:`Unreachable` whose message ``text`` (e.g. a Spark task failure) contains."""
    match = _PATTERN.search(text)
    if match is None:
        return None
    rest = text[match.end() :].splitlines()[0] if text[match.end() :] else ""
    return Unreachable(match["what"], match["name"], match["address"], rest.strip())
