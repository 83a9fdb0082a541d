"""The proxy's web service (port 8080): its ASGI app under uvicorn.

The proxy's one adapter through which uvicorn enters (the broker has its own,
:mod:`magnetar.broker.web_service`; the two services never import each other). uvicorn runs
in-process on the proxy's loop as a task of the process's TaskGroup, without signal capture:
the entry point owns SIGTERM/SIGINT and stops everything in order.
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator
from typing import Any

import uvicorn

from magnetar.tls import ServerTls
from magnetar.tls.https import https_options


class ProxyWebServer(uvicorn.Server):
    """uvicorn's server without its own signal handling."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def build_web_server(
    app: Any, host: str, port: int, tls: ServerTls | None = None
) -> ProxyWebServer:
    """The server of ``app``; with ``tls``, HTTPS (:mod:`magnetar.tls.https`)."""
    options = {} if tls is None else https_options(tls)
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", lifespan="off", access_log=False, **options
    )
    return ProxyWebServer(config)


def bound_port(server: ProxyWebServer, configured: int) -> int:
    """The port the started server listens on (``configured`` unless it was 0)."""
    for listener in getattr(server, "servers", []):
        for sock in listener.sockets:
            return int(sock.getsockname()[1])
    return configured
