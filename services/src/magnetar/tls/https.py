"""HTTPS for the uvicorn web services (the broker's and the proxy's), with the client's
certificate handed to the ASGI app.

:func:`https_options` gives the keyword arguments that make a ``uvicorn.Config`` serve TLS
from a :class:`~magnetar.tls.contexts.ServerTls` (certificates reload as on the binary port)
and put each connection's peer certificate on every request's scope:

- ``scope["extensions"]["tls"]``, the ASGI TLS extension: ``client_cert_chain`` (the client's
  certificate as PEM, or empty), ``client_cert_name`` and ``tls_version``;
- ``scope["magnetar.peer_certificate"]`` (:data:`PEER_CERTIFICATE_SCOPE_KEY`, where the admin
  app's authentication reads it) and ``scope["state"]["peer_certificate"]``: the dict
  ``ssl.SSLSocket.getpeercert()`` gives, or None without a client certificate —
  ``request.state.peer_certificate`` in a FastAPI/Starlette handler, :func:`peer_certificate`
  from a bare scope.

uvicorn's own HTTP/1.1 protocol class is extended by one step (wrapping the app per
connection); uvicorn enters the codebase here and in the two web services only.

Concurrency: on the web service's loop.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from magnetar.tls.contexts import ServerTls, peer_certificate_of

Scope = dict[str, Any]
PEER_CERTIFICATE_SCOPE_KEY = "magnetar.peer_certificate"
ASGIApp = Callable[[Scope, Any, Any], Any]


def peer_certificate(scope: Scope) -> dict[str, Any] | None:
    """The client certificate of the connection an HTTPS request came on (module docstring)."""
    cert = scope.get(PEER_CERTIFICATE_SCOPE_KEY)
    return cert if isinstance(cert, dict) and cert else None


def _subject_name(cert: dict[str, Any]) -> str:
    parts = []
    for rdn in cert.get("subject", ()):
        for key, value in rdn:
            parts.append(f"{key}={value}")
    return ",".join(parts)


def _tls_extension(transport: asyncio.BaseTransport) -> tuple[dict[str, Any], Any]:
    cert = peer_certificate_of(transport.get_extra_info)
    ssl_object = transport.get_extra_info("ssl_object")
    chain: list[str] = []
    version = None
    if isinstance(ssl_object, ssl.SSLObject):
        binary = ssl_object.getpeercert(binary_form=True)
        if binary:
            chain.append(ssl.DER_cert_to_PEM_cert(binary))
        version = ssl_object.version()
    extension = {
        "server_cert": None,
        "client_cert_chain": chain,
        "client_cert_name": _subject_name(cert) if cert else None,
        "client_cert_error": None,
        "tls_version": version,
        "cipher_suite": None,
    }
    return extension, cert


class PeerCertH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, whose app sees the connection's TLS extension and peer cert."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        extension, cert = _tls_extension(transport)
        inner: ASGIApp = self.app

        async def app(scope: Scope, receive: Any, send: Any) -> None:
            scope.setdefault("extensions", {})["tls"] = extension
            scope[PEER_CERTIFICATE_SCOPE_KEY] = cert
            scope.setdefault("state", {})["peer_certificate"] = cert
            await inner(scope, receive, send)

        self.app = app


def https_options(tls: ServerTls) -> dict[str, Any]:
    """``uvicorn.Config`` keyword arguments for HTTPS from ``tls`` (module docstring)."""

    def factory(_config: Any, _default: Any) -> ssl.SSLContext:
        return tls.listening_context()

    return {"ssl_context_factory": factory, "http": PeerCertH11Protocol}
