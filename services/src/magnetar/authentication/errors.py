"""Errors of authentication: a credential refused, and a key that cannot be loaded.

:class:`AuthenticationFailed` is what a client sees (Pulsar's ``AuthenticationError`` on the
binary protocol, HTTP 401 on the admin API); its message says what was wrong with the
credential, never the credential itself. :class:`InvalidKey` is a configuration error found
when a process starts (a key reference that cannot be read or decoded).
"""

from __future__ import annotations

from magnetar.errors import MagnetarError
from magnetar.protocol.errors import register_server_error
from magnetar.wire import pulsar_api_pb2 as pb


class AuthenticationFailed(MagnetarError):
    """A credential was missing, malformed, forged or expired; ``reason`` says which."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class CredentialExpired(AuthenticationFailed):
    """The credential was valid but its expiry time has passed."""


class InvalidKey(MagnetarError):
    """A key reference (``file:``, ``data:``, ``env:`` or base64) cannot be read or decoded."""


register_server_error(AuthenticationFailed, pb.AuthenticationError)
