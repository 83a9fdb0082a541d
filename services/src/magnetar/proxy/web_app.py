"""The proxy's HTTP app (port 8080): a plain ASGI callable, no web framework.

Routes:

- ``/admin/v2/...``, ``/admin/...`` and ``/lookup/v2/...``: forwarded to a broker through
  :class:`~.http_forward.HttpForwarder` (redirects to the owner followed inside the proxy);
  status, headers and body come back as the broker gave them, the body streamed. A request
  body over ``max_body_bytes`` gets ``413``; no registered broker ``503``; a broker that does
  not answer ``502`` (``504`` on its timeout) — all with Pulsar's ``{"reason": "..."}`` body.
- ``GET /metrics``: the proxy's own metrics (Prometheus text).
- ``GET /status.html`` (Pulsar's probe path) and ``GET /health``: ``200 OK`` while at least
  one broker is registered, else ``503`` with the reason.
- anything else: ``404``.

Concurrency: one coroutine per request, on the proxy's loop (uvicorn runs it).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from magnetar.errors import MagnetarError
from magnetar.proxy.discovery import BrokerDiscovery
from magnetar.proxy.errors import NoBrokerAvailable, http_status_for
from magnetar.proxy.http_forward import HttpForwarder
from magnetar.telemetry import get_logger
from magnetar.telemetry.metrics import CONTENT_TYPE, Metrics

log = get_logger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

FORWARDED_PREFIXES = ("/admin/", "/lookup/")
HEALTH_PATHS = ("/status.html", "/health")


class ProxyWebApp:
    """The ASGI app (module docstring)."""

    def __init__(
        self,
        forwarder: HttpForwarder,
        discovery: BrokerDiscovery,
        metrics: Metrics,
        max_body_bytes: int,
    ) -> None:
        self._forwarder = forwarder
        self._discovery = discovery
        self._metrics = metrics
        self._max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        method: str = scope["method"]
        if path.startswith(FORWARDED_PREFIXES):
            await self._forward(scope, receive, send)
        elif path == "/metrics" and method in ("GET", "HEAD"):
            await _reply(send, 200, await self._metrics.scrape(), CONTENT_TYPE)
        elif path in HEALTH_PATHS and method in ("GET", "HEAD"):
            if self._discovery.brokers:
                await _reply(send, 200, b"OK", "text/plain; charset=utf-8")
            else:
                await _reason(send, 503, str(NoBrokerAvailable()))
        else:
            await _reason(send, 404, f"no route {method} {path} on the proxy")

    async def _forward(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = await _read_body(receive, self._max_body_bytes)
        if body is None:
            await _reason(send, 413, f"request body over {self._max_body_bytes} bytes")
            return
        query = scope.get("query_string", b"").decode("latin-1")
        target = scope.get("raw_path", scope["path"].encode()).decode("latin-1")
        target += f"?{query}" if query else ""
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        client = scope.get("client") or ("?", 0)
        try:
            answer = await self._forwarder.forward(
                scope["method"], target, headers, body, str(client[0])
            )
        except MagnetarError as exc:
            log.info("proxy_http_forward_failed", path=scope["path"], error=str(exc))
            await _reason(send, http_status_for(exc), str(exc))
            return
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": answer.status,
                    "headers": [
                        (k.encode("latin-1"), v.encode("latin-1")) for k, v in answer.headers
                    ],
                }
            )
            async for chunk in answer.body():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            await answer.close()


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    """The whole request body, or None when it exceeds ``limit`` bytes."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b"".join(chunks)
        chunk: bytes = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _reply(send: Send, status: int, body: bytes, content_type: str) -> None:
    headers = [(b"content-type", content_type.encode()), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _reason(send: Send, status: int, reason: str) -> None:
    await _reply(send, status, json.dumps({"reason": reason}).encode(), "application/json")
