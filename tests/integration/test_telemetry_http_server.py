"""The minimal HTTP responder on loopback: routes, HEAD, 404/405/400/500, oversized heads,
slow requests and clients that do not read their reply."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from magnetar.telemetry import http_server
from magnetar.telemetry.http_server import MAX_HEAD_BYTES, HttpResponse, HttpServer


async def hello() -> HttpResponse:
    return HttpResponse(200, b"hello")


async def broken() -> HttpResponse:
    raise RuntimeError("boom")


@pytest.fixture
async def port() -> AsyncIterator[int]:
    server = HttpServer({"/hello": hello, "/broken": broken})
    bound = await server.start("127.0.0.1", 0)
    yield bound
    await server.close()


async def request(port: int, raw: bytes) -> bytes:
    """The whole reply; b"" when the server closed without one (a reset counts as that)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(raw)
        await writer.drain()
        async with asyncio.timeout(10):
            return await reader.read()
    except ConnectionResetError:
        return b""
    finally:
        writer.close()


async def test_get_a_route(port: int) -> None:
    reply = await request(port, b"GET /hello?x=1 HTTP/1.1\r\nHost: h\r\n\r\n")
    head, body = reply.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"Content-Length: 5" in head
    assert b"Connection: close" in head
    assert body == b"hello"


async def test_head_has_no_body(port: int) -> None:
    reply = await request(port, b"HEAD /hello HTTP/1.1\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 200 OK\r\n")
    assert reply.endswith(b"\r\n\r\n")


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        (b"GET /nope HTTP/1.1\r\n\r\n", b"404"),
        (b"POST /hello HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", b"405"),
        (b"garbage\r\n\r\n", b"400"),
        (b"GET /broken HTTP/1.1\r\n\r\n", b"500"),
    ],
)
async def test_errors(port: int, raw: bytes, status: bytes) -> None:
    assert (await request(port, raw)).startswith(b"HTTP/1.1 " + status)


async def test_oversized_head_is_dropped_and_server_keeps_serving(port: int) -> None:
    huge = b"GET /hello HTTP/1.1\r\nX: " + b"a" * (MAX_HEAD_BYTES * 2) + b"\r\n\r\n"
    assert await request(port, huge) == b""
    assert (await request(port, b"GET /hello HTTP/1.1\r\n\r\n")).endswith(b"hello")


async def test_a_head_that_does_not_arrive_in_time_is_dropped(
    port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(http_server, "REQUEST_TIMEOUT_S", 0.2)
    started = asyncio.get_running_loop().time()
    assert await request(port, b"GET /hello HTTP/1.1\r\n") == b""  # the head never ends
    assert asyncio.get_running_loop().time() - started < 5


BIG_BODY_BYTES = 32 << 20  # more than loopback's socket buffers hold


async def big() -> HttpResponse:
    return HttpResponse(200, b"x" * BIG_BODY_BYTES)


async def test_a_client_that_does_not_read_its_reply_is_cut_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(http_server, "REQUEST_TIMEOUT_S", 0.2)
    server = HttpServer({"/big": big})
    bound = await server.start("127.0.0.1", 0)
    reader, writer = await asyncio.open_connection("127.0.0.1", bound)
    try:
        writer.write(b"GET /big HTTP/1.1\r\n\r\n")
        await writer.drain()
        await asyncio.sleep(1.0)  # the client reads nothing for five times the deadline
        received = 0
        try:
            async with asyncio.timeout(10):
                while chunk := await reader.read(1 << 20):
                    received += len(chunk)
        except ConnectionResetError:
            pass
        assert received < BIG_BODY_BYTES
    finally:
        writer.close()
        await server.close()
