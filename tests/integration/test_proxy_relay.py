"""The proxy's byte relay (``magnetar.proxy.relay``) between two real loopback sockets, in one
process: bytes arrive intact both ways; a peer that stops reading makes the relay stop reading
the other side, so the proxy never holds more than its buffer mark plus one read, and the relay
is dropped after the write-stall timeout; a side that closes closes the other.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from magnetar.proxy.relay import Relay, RelayEnd, set_limits
from magnetar.proxy.stats import ProxyStats

BUFFER = 64 * 1024
READ_MAX = 256 * 1024  # asyncio's largest single read: what one chunk can add over the mark
STALL_S = 1.0


class Holder(asyncio.Protocol):
    """Holds a transport until the relay takes it over; keeps what arrives meanwhile."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.made = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.made.set_result(transport)


@dataclass
class Wired:
    """A client socket <-> proxy <-> broker socket, the proxy side being a Relay."""

    client: socket.socket  # what a client holds (blocking, read from a thread)
    broker: socket.socket  # what a broker holds
    relay: Relay
    stats: ProxyStats
    closed: list[Relay]


@pytest.fixture
async def wired() -> AsyncIterator[Wired]:
    loop = asyncio.get_running_loop()
    front = Holder()
    server = await loop.create_server(lambda: front, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    client_side = await front.made
    broker_listener = socket.create_server(("127.0.0.1", 0))
    back = Holder()
    broker_side, _ = await loop.create_connection(
        lambda: back, "127.0.0.1", broker_listener.getsockname()[1]
    )
    broker, _ = await asyncio.to_thread(broker_listener.accept)
    broker_listener.close()
    assert isinstance(broker_side, asyncio.Transport)
    stats = ProxyStats()
    closed: list[Relay] = []
    for transport in (client_side, broker_side):
        set_limits(transport, BUFFER)
    relay = Relay(client_side, broker_side, "b:1", stats, STALL_S, closed.append)
    client_side.set_protocol(RelayEnd(relay, client_side, from_client=True))
    broker_side.set_protocol(RelayEnd(relay, broker_side, from_client=False))
    try:
        yield Wired(client, broker, relay, stats, closed)
    finally:
        relay.abort()
        client.close()
        broker.close()
        server.close()


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    chunks, got = [], 0
    sock.settimeout(10)
    while got < n:
        chunk = sock.recv(min(1 << 20, n - got))
        assert chunk, f"closed after {got} of {n} bytes"
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


async def test_bytes_arrive_intact_both_ways(wired: Wired) -> None:
    up, down = os.urandom(3 * 1024 * 1024), os.urandom(2 * 1024 * 1024)
    sent = asyncio.gather(
        asyncio.to_thread(wired.client.sendall, up),
        asyncio.to_thread(wired.broker.sendall, down),
    )
    got_up, got_down = await asyncio.gather(
        asyncio.to_thread(recv_exactly, wired.broker, len(up)),
        asyncio.to_thread(recv_exactly, wired.client, len(down)),
    )
    await sent
    assert got_up == up
    assert got_down == down
    assert wired.stats.bytes_from_clients == len(up)
    assert wired.stats.bytes_to_clients == len(down)


async def test_a_client_that_stops_reading_bounds_the_buffer_then_is_dropped(
    wired: Wired,
) -> None:
    wired.broker.setblocking(False)
    payload = os.urandom(64 * 1024)
    most = 0
    deadline = asyncio.get_running_loop().time() + STALL_S + 10
    while not wired.relay.closed:
        assert asyncio.get_running_loop().time() < deadline, "the relay was never dropped"
        try:
            while True:
                wired.broker.send(payload)  # as fast as the proxy takes it
        except BlockingIOError:
            pass
        except OSError:
            break  # the proxy dropped the relay: the broker's socket is reset
        most = max(most, wired.relay.client.get_write_buffer_size())
        await asyncio.sleep(0.01)
    assert most <= BUFFER + READ_MAX, f"the proxy held {most} bytes for a client"
    assert wired.stats.dropped_slow == 1
    assert wired.closed == [wired.relay]


async def test_a_broker_that_closes_closes_the_client_after_its_bytes(wired: Wired) -> None:
    last = os.urandom(100_000)
    await asyncio.to_thread(wired.broker.sendall, last)
    wired.broker.close()
    assert await asyncio.to_thread(recv_exactly, wired.client, len(last)) == last
    wired.client.settimeout(10)
    assert await asyncio.to_thread(wired.client.recv, 1) == b""  # then the end
    assert wired.closed == [wired.relay]
