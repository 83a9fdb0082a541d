"""A minimal HTTP/1.1 responder for a process's few GET routes: ``/metrics`` and health probes.

For processes that serve no admin API (the bookie: BookKeeper's ``httpServerPort``), where a
web framework would be a dependency and a second adapter for a handful of fixed GET paths.
What it does, and all it does:

- one request per connection (``Connection: close``), GET or HEAD; the request target's path
  is looked up exactly (a query string is ignored): 404 for an unknown path, 405 for another
  method, 400 for a request line it cannot read;
- limits: the request head must arrive within :data:`REQUEST_TIMEOUT_S` and fit in
  :data:`MAX_HEAD_BYTES`, and the client must take the reply within another
  :data:`REQUEST_TIMEOUT_S` (else the connection is aborted, so a client that stops reading
  never holds a handler and its buffered reply); the body of a request is never read;
- a route is an ``async`` callable returning an :class:`HttpResponse`; an exception in a
  route is logged and answered with 500, never ends the server.

Who calls it: a process entry point builds one :class:`HttpServer`, :meth:`HttpServer.start`
s it and :meth:`HttpServer.close` s it in its shutdown steps. Connection handlers run as the
tasks asyncio's server gives each connection, on the process's loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus

from magnetar.telemetry.logging import get_logger

log = get_logger(__name__)

REQUEST_TIMEOUT_S = 5.0
MAX_HEAD_BYTES = 8192
TEXT = "text/plain; charset=utf-8"
JSON = "application/json"


@dataclass(frozen=True, slots=True)
class HttpResponse:
    status: int
    body: bytes
    content_type: str = TEXT


Route = Callable[[], Awaitable[HttpResponse]]


def _plain(status: HTTPStatus) -> HttpResponse:
    return HttpResponse(status.value, status.phrase.encode())


class HttpServer:
    """GET routes by exact path, served on one listening socket."""

    def __init__(self, routes: Mapping[str, Route]) -> None:
        self._routes = dict(routes)
        self._server: asyncio.Server | None = None

    async def start(self, host: str, port: int) -> int:
        """Listen on ``host:port`` (0: any free port); return the bound port."""
        self._server = await asyncio.start_server(
            self._handle, host, port, limit=MAX_HEAD_BYTES, reuse_address=True
        )
        bound: int = self._server.sockets[0].getsockname()[1]
        return bound

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            try:
                async with asyncio.timeout(REQUEST_TIMEOUT_S):
                    head = await reader.readuntil(b"\r\n\r\n")
            except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                return  # a slow, cut or oversized request gets no answer
            method, path = _request_line(head)
            response = await self._respond(method, path)
            writer.write(_encode(response, include_body=method != "HEAD"))
            async with asyncio.timeout(REQUEST_TIMEOUT_S):
                await writer.drain()
        except TimeoutError:
            writer.transport.abort()  # a client that does not read its reply is cut off
        except ConnectionError:
            pass  # the client went away
        finally:
            writer.close()

    async def _respond(self, method: str, path: str) -> HttpResponse:
        if not path:
            return _plain(HTTPStatus.BAD_REQUEST)
        route = self._routes.get(path)
        if route is None:
            return _plain(HTTPStatus.NOT_FOUND)
        if method not in ("GET", "HEAD"):
            return _plain(HTTPStatus.METHOD_NOT_ALLOWED)
        try:
            return await route()
        except Exception as exc:
            log.exception("http_route_failed", path=path, error=type(exc).__name__)
            return _plain(HTTPStatus.INTERNAL_SERVER_ERROR)


def _request_line(head: bytes) -> tuple[str, str]:
    """Method and path of the request (path "" when the line is not an HTTP request line)."""
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    parts = line.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/") or not parts[1].startswith("/"):
        return "", ""
    return parts[0], parts[1].split("?", 1)[0]


def _encode(response: HttpResponse, include_body: bool) -> bytes:
    status = HTTPStatus(response.status)
    head = (
        f"HTTP/1.1 {status.value} {status.phrase}\r\n"
        f"Content-Type: {response.content_type}\r\n"
        f"Content-Length: {len(response.body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode("latin-1") + (response.body if include_body else b"")
