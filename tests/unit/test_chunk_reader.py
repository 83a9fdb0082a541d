"""ChunkReader through a real loopback server: what was sent is what is read, in order, at
any write sizes; the end of the stream, a reset, flow control and its own bad calls."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from magnetar.chunk_reader import ByteReader, ChunkReader, open_connection, start_server


class _Server:
    """A server on loopback that hands each connection's reader to the test."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.readers: asyncio.Queue[tuple[ByteReader, asyncio.StreamWriter]] = asyncio.Queue()
        self.server: asyncio.Server | None = None
        self.port = 0

    async def _serve(self, reader: ByteReader, writer: asyncio.StreamWriter) -> None:
        await self.readers.put((reader, writer))

    async def __aenter__(self) -> _Server:
        self.server = await start_server(self._serve, "127.0.0.1", 0, limit=self.limit)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

    async def connect(self) -> tuple[asyncio.StreamWriter, ByteReader]:
        _, client = await asyncio.open_connection("127.0.0.1", self.port)
        async with asyncio.timeout(5):
            reader, _ = await self.readers.get()
        return client, reader


@pytest.fixture
async def server() -> AsyncIterator[_Server]:
    async with _Server(limit=4096) as s:
        yield s


async def read_to_end(reader: ByteReader, n: int) -> bytes:
    got = bytearray()
    async with asyncio.timeout(10):
        while data := await reader.read(n):
            assert len(data) <= n
            got += data
    return bytes(got)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    writes=st.lists(st.binary(min_size=1, max_size=20_000), max_size=12),
    read_size=st.sampled_from([1, 7, 4096, 256 * 1024]),
)
async def test_what_was_sent_is_read_in_order(
    server: _Server, writes: list[bytes], read_size: int
) -> None:
    client, reader = await server.connect()
    for data in writes:
        client.write(data)
        await client.drain()
    client.write_eof()
    assert await read_to_end(reader, read_size) == b"".join(writes)
    assert isinstance(reader, ChunkReader)
    assert reader.at_eof()
    client.close()


def paused(reader: ChunkReader) -> bool:
    return reader._paused


async def test_a_reader_that_falls_behind_pauses_the_socket_then_resumes(server: _Server) -> None:
    """More than twice the limit unread pauses reading (the sender's writes back up); reading
    it resumes, and nothing is lost."""
    client, reader = await server.connect()
    assert isinstance(reader, ChunkReader)
    sent = bytes(range(256)) * 2048  # 512 KiB against a 4 KiB limit
    client.write(sent)
    for _ in range(200):
        await asyncio.sleep(0.01)
        if paused(reader):
            break
    assert paused(reader)
    assert reader._unread > 2 * server.limit
    client.write_eof()
    assert await read_to_end(reader, 64 * 1024) == sent
    assert not paused(reader)
    client.close()


async def test_a_reset_is_raised_to_the_reader(server: _Server) -> None:
    client, reader = await server.connect()
    sock = client.get_extra_info("socket")
    # A close with unread data and SO_LINGER 0: the server side sees a reset.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    client.transport.abort()

    async def read_until_it_fails() -> None:
        async with asyncio.timeout(5):
            while await reader.read(1024):
                pass

    with pytest.raises(ConnectionError):
        await read_until_it_fails()
    assert isinstance(reader, ChunkReader)
    assert isinstance(reader.exception(), ConnectionError)


async def test_bad_calls_are_refused() -> None:
    loop = asyncio.get_running_loop()
    with pytest.raises(ValueError, match="limit must be positive"):
        ChunkReader(0, loop)
    reader = ChunkReader(16, loop)
    with pytest.raises(ValueError, match="read size must be positive"):
        await reader.read(0)
    waiting = asyncio.create_task(reader.read(10))
    await asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="another read is waiting"):
        await reader.read(10)
    reader.feed_data(b"abc")
    assert await waiting == b"abc"
    reader.feed_eof()
    assert await reader.read(10) == b""
    assert reader.at_eof()


async def test_a_client_connection_reads_what_the_server_wrote() -> None:
    sent = bytes(range(256)) * 300

    async def serve(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for i in range(0, len(sent), 1000):
            writer.write(sent[i : i + 1000])
            await writer.drain()
        writer.close()

    plain = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        port = plain.sockets[0].getsockname()[1]
        reader, writer = await open_connection("127.0.0.1", port, limit=4096)
        assert isinstance(reader, ChunkReader)
        assert await read_to_end(reader, 8192) == sent
        writer.close()
    finally:
        plain.close()
        await plain.wait_closed()
