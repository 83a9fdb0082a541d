"""The one error of the shared admin JSON shapes: a document that is malformed or out of range.

Raised by every ``from_json`` of :mod:`magnetar.policies` with a ``reason`` a user can read. The
broker's admin API answers it with HTTP 412 (its table in :mod:`magnetar.admin.errors`); the
admin client wraps it into ``UnexpectedResponse`` where a server's answer enters. Never
retryable: the same document fails the same way.
"""

from __future__ import annotations

from magnetar.errors import MagnetarError


class InvalidPolicies(MagnetarError):
    """A policy value (or a tenant/cluster document) that is malformed or out of range."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
