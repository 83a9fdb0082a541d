"""A stream reader that hands over the bytes a socket delivered, without copying them.

``asyncio.StreamReader`` copies every received byte three times: into its bytearray, out of it
as a bytearray slice, and that slice into the ``bytes`` that :meth:`read` returns. A server
that decodes frames from what it reads needs none of those copies: each chunk the transport
delivers is already a ``bytes`` object. :class:`ChunkReader` keeps the chunks as they came and
:meth:`~ChunkReader.read` returns them: the one chunk itself, or the chunks joined (one copy)
when several came in between two reads. At 16 KiB messages the copies on the loop thread
(these and the frame decoder's) were about a tenth of a broker's CPU (docs/benchmarks.md,
"Issue 17, session 13").

It is a ``StreamReader`` (``asyncio.StreamWriter`` insists on one) that overrides what
``asyncio.StreamReaderProtocol`` and the writer call on a reader (``set_transport``,
``feed_data``, ``feed_eof``, ``set_exception``, ``exception``) and offers one way to read,
:meth:`~ChunkReader.read`; the inherited line and exact-size reads are not for use (they would
see an empty buffer). Flow control is StreamReader's: reading from the socket pauses once more
than twice ``limit`` bytes are unread and resumes once no more than ``limit`` are.

:func:`start_server` and :func:`open_connection` are asyncio's with this reader. On the loop
only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol, SupportsIndex, cast


class ByteReader(Protocol):
    """How a connection reads: a :class:`ChunkReader`, or an ``asyncio.StreamReader``."""

    async def read(self, n: int) -> bytes: ...

    def feed_eof(self) -> None: ...


# What start_server calls for each connection.
ClientConnected = Callable[[ByteReader, asyncio.StreamWriter], Awaitable[None]]


class ChunkReader(asyncio.StreamReader):
    """Received bytes, kept as the chunks the transport delivered until :meth:`read`."""

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        if limit <= 0:
            raise ValueError(f"limit must be positive, got {limit}")
        super().__init__(limit, loop)
        # Its own state (StreamReader's, set above, is not used by the methods below).
        self._limit = limit
        self._loop = loop
        self._chunks: list[bytes] = []
        self._unread = 0  # bytes in _chunks
        self._eof = False
        self._exception: Exception | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._transport: asyncio.BaseTransport | None = None
        self._paused = False

    # ------------------------------------------------------------------ the protocol's side
    def set_transport(self, transport: asyncio.BaseTransport) -> None:
        assert self._transport is None, "transport already set"
        self._transport = transport

    def feed_data(self, data: Iterable[SupportsIndex]) -> None:
        assert not self._eof, "feed_data after feed_eof"
        # Transports deliver bytes; anything else is copied once into bytes here.
        chunk = data if type(data) is bytes else bytes(data)
        if not chunk:
            return
        self._chunks.append(chunk)
        self._unread += len(chunk)
        self._wake()
        transport = self._transport
        if transport is not None and not self._paused and self._unread > 2 * self._limit:
            try:
                cast(asyncio.ReadTransport, transport).pause_reading()
            except NotImplementedError:  # it cannot pause: everything is kept
                self._transport = None
            else:
                self._paused = True

    def feed_eof(self) -> None:
        self._eof = True
        self._wake()

    def set_exception(self, exc: Exception) -> None:
        self._exception = exc
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.cancelled():
                waiter.set_exception(exc)

    def exception(self) -> Exception | None:
        return self._exception

    def at_eof(self) -> bool:
        """The end was received and everything before it read."""
        return self._eof and not self._chunks

    # ------------------------------------------------------------------ the reader's side
    async def read(self, n: int = -1) -> bytes:
        """At most ``n`` bytes (n > 0: reading to the end in one call is not offered) as soon
        as any are unread; b"" at the end of the stream. Raises what the connection failed
        with."""
        if n <= 0:
            raise ValueError(f"read size must be positive, got {n}")
        if self._exception is not None:
            raise self._exception
        if not self._chunks and not self._eof:
            await self._wait()
        chunks = self._chunks
        if not chunks:
            return b""
        data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        if len(data) > n:  # (a copy of the rest, only when a read asks for less)
            self._chunks = [data[n:]]
            self._unread = len(data) - n
            data = data[:n]
        else:
            self._chunks = []
            self._unread = 0
        if self._paused and self._unread <= self._limit:
            self._paused = False
            cast(asyncio.ReadTransport, self._transport).resume_reading()
        return data

    async def _wait(self) -> None:
        if self._waiter is not None:
            raise RuntimeError("read() called while another read is waiting for data")
        if self._paused:  # waiting while paused would wait for ever
            self._paused = False
            cast(asyncio.ReadTransport, self._transport).resume_reading()
        self._waiter = self._loop.create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.cancelled():
                waiter.set_result(None)


async def start_server(
    client_connected: ClientConnected, host: str, port: int, *, limit: int, **kwds: Any
) -> asyncio.Server:
    """``asyncio.start_server`` whose connections read through a :class:`ChunkReader` (the
    callback gets it where a StreamReader would be: use only :meth:`ChunkReader.read`, and
    ``feed_eof``/``at_eof``/``exception``)."""
    loop = asyncio.get_running_loop()

    def factory() -> asyncio.StreamReaderProtocol:
        return asyncio.StreamReaderProtocol(ChunkReader(limit, loop), client_connected, loop=loop)

    return await loop.create_server(factory, host, port, **kwds)


async def open_connection(
    host: str, port: int, *, limit: int, **kwds: Any
) -> tuple[ChunkReader, asyncio.StreamWriter]:
    """``asyncio.open_connection`` that reads through a :class:`ChunkReader`."""
    loop = asyncio.get_running_loop()
    reader = ChunkReader(limit, loop)
    protocol = asyncio.StreamReaderProtocol(reader, loop=loop)
    transport, _ = await loop.create_connection(lambda: protocol, host, port, **kwds)
    return reader, asyncio.StreamWriter(transport, protocol, reader, loop)
