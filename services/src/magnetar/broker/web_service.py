"""The admin web service (port 8080): an ASGI app (the admin's FastAPI app) under uvicorn.

The one adapter through which uvicorn enters. uvicorn runs in-process on the broker's loop as a
task of the process's TaskGroup; it must not take over SIGTERM/SIGINT (the process entry point
owns them and stops everything in order), so signal capture is switched off.

The app itself comes from :mod:`magnetar.admin`, a layer above the broker: the command line
passes its ``create_app`` in as an :data:`AppFactory`, so the broker never imports it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator
from typing import Any

import uvicorn

from magnetar.tls import ServerTls
from magnetar.tls.https import https_options

AppFactory = Callable[[Any], Any]


class WebServer(uvicorn.Server):
    """uvicorn's server without its own signal handling."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def build_web_server(app: Any, host: str, port: int, tls: ServerTls | None = None) -> WebServer:
    """The server of ``app`` on ``host:port``; with ``tls``, HTTPS (:mod:`magnetar.tls.https`:
    reloading certificates, the client's certificate on each request's scope)."""
    options = {} if tls is None else https_options(tls)
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", lifespan="off", access_log=False, **options
    )
    return WebServer(config)
