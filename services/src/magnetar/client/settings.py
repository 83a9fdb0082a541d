"""Connection settings of the client: authentication providers and TLS options.

Values only (frozen dataclasses and a Protocol); built by the application, read by
:class:`~magnetar.client.connection.Connection` when it opens. Safe from any task.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol


class Authentication(Protocol):
    """What CONNECT carries to authenticate: a method name and its data."""

    @property
    def method_name(self) -> str: ...

    def auth_data(self) -> bytes: ...


@dataclass(frozen=True)
class AuthenticationToken:
    """Pulsar token authentication (method ``token``): a JWT or any opaque token, or a function
    returning the current one — called at each CONNECT and each AUTH_CHALLENGE, so a broker
    that asks a long-lived connection to refresh an expired token gets a fresh one (as with the
    official client's token supplier)."""

    token: str | Callable[[], str] = field(repr=False)

    @property
    def method_name(self) -> str:
        return "token"

    def auth_data(self) -> bytes:
        token = self.token() if callable(self.token) else self.token
        return token.encode()


@dataclass(frozen=True)
class TlsOptions:
    """TLS for ``pulsar+ssl://`` service URLs. ``context`` wins over the file options."""

    trust_certs_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    allow_insecure_connection: bool = False
    validate_hostname: bool = True
    context: ssl.SSLContext | None = None

    def ssl_context(self) -> ssl.SSLContext:
        if self.context is not None:
            return self.context
        ctx = ssl.create_default_context(cafile=self.trust_certs_file)
        if self.cert_file is not None:
            ctx.load_cert_chain(self.cert_file, self.key_file)
        if self.allow_insecure_connection:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        elif not self.validate_hostname:
            ctx.check_hostname = False
        return ctx
