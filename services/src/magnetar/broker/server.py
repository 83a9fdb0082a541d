"""The broker's TCP listener: accepts clients and runs one ServerCnx per connection.

``BrokerServer.start()`` binds (with a :class:`~magnetar.tls.ServerTls`, the TLS port:
each handshake gets the newest certificate, and one not done within the handshake timeout
drops the socket); every accepted connection is served by a task the server
keeps; ``close()`` stops accepting, lets every connection finish
(:meth:`~magnetar.broker.connection.ServerCnx.finish`: no further frame is taken, every SEND
taken is answered, the answers are sent before a half-close) for at most ``FINISH_S``, then
closes what is left and waits (bounded) for their clean-up, before the service closes its
topics — whose managed ledgers must still be open for the adds in flight to complete.

Concurrency: on the broker's loop.
"""

from __future__ import annotations

import asyncio
import time

from magnetar.broker.connection import ServerCnx
from magnetar.broker.service import BrokerService
from magnetar.chunk_reader import ByteReader, start_server
from magnetar.open_connections import OpenConnections
from magnetar.telemetry import get_logger
from magnetar.tls import ServerTls, listen_options

log = get_logger(__name__)

# The reader (a ChunkReader: received bytes handed over without copies) stops reading the
# socket above twice this (and registers it with the selector again when drained): at
# asyncio's 64 KiB default that is a pair of epoll calls for many reads under load. 1 MiB
# bounds a connection's unread bytes at 2 MiB.
_STREAM_LIMIT = 1024 * 1024
TLS_HANDSHAKE_TIMEOUT_S = 10.0
# How long a stop lets the connections finish: the adds in flight complete within a journal
# fsync or two, and the official client closes its side as soon as it reads the half-close.
FINISH_S = 1.0


class BrokerServer:
    def __init__(
        self, service: BrokerService, host: str, port: int, tls: ServerTls | None = None
    ) -> None:
        self.service = service
        self.host = host
        self.port = port
        self.tls = tls
        self._server: asyncio.Server | None = None
        self._connections: OpenConnections[ServerCnx] = OpenConnections()

    async def start(self) -> int:
        """Listen; returns the bound port (useful with port 0)."""
        self._server = await start_server(
            self._serve,
            self.host,
            self.port,
            limit=_STREAM_LIMIT,
            **listen_options(self.tls, TLS_HANDSHAKE_TIMEOUT_S),
        )
        self.port = int(self._server.sockets[0].getsockname()[1])
        log.info("broker_listening", host=self.host, port=self.port, tls=self.tls is not None)
        return self.port

    async def _serve(self, reader: ByteReader, writer: asyncio.StreamWriter) -> None:
        cnx = ServerCnx(self.service, reader, writer)
        self._connections.add(cnx)
        try:
            await cnx.run()
        except Exception as exc:
            log.error("connection_failed", client=cnx.address, error=repr(exc))
        finally:
            self._connections.discard(cnx)

    @property
    def connections(self) -> int:
        return len(self._connections)

    async def close(self, timeout_s: float = 10.0, finish_s: float = FINISH_S) -> None:
        """Stop accepting; let the connections finish (at most ``finish_s``), then close them
        and wait for their clean-up (at most ``timeout_s``)."""
        if self._server is None:
            return
        server, self._server = self._server, None
        server.close()
        finishing = [cnx.finish() for cnx in self._connections]
        if finishing:
            start = time.monotonic()
            in_time = True
            try:
                async with asyncio.timeout(min(finish_s, timeout_s)):
                    outcomes = await asyncio.gather(*finishing, return_exceptions=True)
            except TimeoutError:
                in_time = False  # what is left is closed below: its unanswered SENDs are resent
            else:
                for outcome in outcomes:
                    if isinstance(outcome, Exception):
                        log.warning("broker_connection_finish_failed", error=repr(outcome))
            (log.info if in_time else log.warning)(
                "broker_connections_finished", port=self.port, connections=len(finishing),
                in_time=in_time, seconds=round(time.monotonic() - start, 3),
            )  # fmt: skip
        await self._connections.close(server, timeout_s)
        log.info("broker_stopped", port=self.port, tls=self.tls is not None)
