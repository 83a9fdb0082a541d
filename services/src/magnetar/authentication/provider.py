"""The authentication provider seam: what a provider is given, and what it answers.

Pulsar's ``AuthenticationProvider``: one per method name (``token``, ``tls``), each turning a
credential into a role. The binary protocol hands over CONNECT's (or AUTH_RESPONSE's)
``auth_data`` as :attr:`Credentials.command_data`; the HTTP API hands over the token of an
``Authorization: Bearer`` header the same way; TLS hands over the peer certificate in the shape
``ssl.SSLSocket.getpeercert()`` returns. A provider answers a :class:`Principal` or raises
:class:`~magnetar.authentication.errors.AuthenticationFailed`.

Providers are pure and synchronous (a signature check, a dict lookup): call them from any task.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

PeerCertificate = Mapping[str, Any]
"""A peer certificate as ``ssl.SSLSocket.getpeercert()`` returns it."""


@dataclass(frozen=True)
class Credentials:
    """What a client presented: a method's data and, over TLS, its certificate."""

    command_data: bytes | None = None
    peer_certificate: PeerCertificate | None = None


@dataclass(frozen=True)
class Principal:
    """An authenticated client: its ``role``, the ``method`` that proved it, and when the
    credential stops being valid (epoch seconds; None: never)."""

    role: str
    method: str
    expires_at: float | None = None

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and now >= self.expires_at


class AuthenticationProvider(Protocol):
    """One authentication method, by its Pulsar name."""

    @property
    def method_name(self) -> str: ...

    def authenticate(self, credentials: Credentials) -> Principal: ...
