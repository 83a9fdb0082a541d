"""The proxy's own connections to brokers, for the requests it forwards on lookup connections.

A client's lookup connection (a CONNECT without ``proxy_to_broker_url``) is answered by the
proxy; the requests it cannot answer alone — LOOKUP (each hop), PARTITIONED_METADATA,
GET_TOPICS_OF_NAMESPACE, GET_SCHEMA — go to a broker over a :class:`BrokerLink`: one binary
connection per broker, shared by every client of the proxy, on which the proxy numbers the
requests itself (the client's request id is put back into the answer by the caller).

Invariants: a link answers every request it accepted, with the broker's reply, with
:class:`~.errors.BrokerRequestTimeout` after the operation timeout, or with
:class:`~.errors.BrokerUnreachable` when the connection ends; it holds at most
``max_pending`` requests (more wait for a slot, each within its own timeout). It answers the
broker's PINGs. :class:`BrokerLinks` opens a link on first use and again after one closed, one
at a time per broker.

Concurrency: each link has one reader task (on the proxy's loop), owned by the link and
cancelled by :meth:`BrokerLink.close`; requests come from the client connections' tasks.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Iterator

from magnetar.cancellation import cancel_and_wait
from magnetar.chunk_reader import open_connection
from magnetar.protocol import commands
from magnetar.protocol.errors import ProtocolError
from magnetar.protocol.frame import Frame, FrameDecoder, command_body, encode_command
from magnetar.protocol.version import MAX_PROTOCOL_VERSION
from magnetar.proxy.broker_dial import BrokerDial
from magnetar.proxy.credentials import BrokerCredential
from magnetar.proxy.errors import BrokerRequestTimeout, BrokerUnreachable
from magnetar.proxy.settings import RelayLimits
from magnetar.telemetry import get_logger
from magnetar.wire import pulsar_api_pb2 as pb

log = get_logger(__name__)

T = pb.BaseCommand
PROXY_VERSION = "Magnetar-Proxy-0.1.0"
_READ_CHUNK = 64 * 1024


async def read_frame(reader: asyncio.StreamReader, decoder: FrameDecoder) -> Iterator[Frame]:
    """The frames complete after one more read (ConnectionError at the end of the stream)."""
    data = await reader.read(_READ_CHUNK)
    if not data:
        raise ConnectionError("connection closed")
    decoder.feed(data)
    return decoder.frames()


class BrokerLink:
    """One shared request connection to a broker (module docstring)."""

    def __init__(
        self,
        address: str,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        decoder: FrameDecoder,
        limits: RelayLimits,
    ) -> None:
        self.address = address
        self._reader = reader
        self._writer = writer
        self._decoder = decoder
        self._limits = limits
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[pb.BaseCommand]] = {}
        self._slots = asyncio.Semaphore(limits.max_pending_requests)
        self._open = True
        self._task = asyncio.create_task(self._read(), name=f"proxy-link-{address}")

    @classmethod
    async def open(
        cls,
        address: str,
        limits: RelayLimits,
        dial: BrokerDial | None = None,
        credential: BrokerCredential | None = None,
    ) -> BrokerLink:
        """Connect to the broker ``address`` names (``host:port`` of its plain listener; its
        TLS one with a TLS ``dial``) and do the CONNECT handshake (with the proxy's own
        ``credential``, if it has one)."""
        target = (dial or BrokerDial(None, None)).target(address)  # BrokerWithoutTls
        try:
            async with asyncio.timeout(limits.connect_timeout_s + limits.handshake_timeout_s):
                reader, writer = await open_connection(  # (reads without copies)
                    target.host,
                    target.port,
                    limit=64 * 1024,  # asyncio's default flow-control limit
                    ssl=target.ssl,
                    server_hostname=target.server_hostname,
                )
                try:
                    decoder = FrameDecoder(max_frame_size=limits.max_frame_size)
                    connect = commands.connect(
                        client_version=PROXY_VERSION,
                        protocol_version=MAX_PROTOCOL_VERSION,
                        auth_method_name=None if credential is None else credential.method,
                        auth_data=None if credential is None else credential.data,
                    )
                    writer.write(encode_command(connect))
                    await _await_connected(reader, decoder, address)
                except BaseException:
                    writer.close()
                    raise
        except TimeoutError:
            raise BrokerUnreachable(address, "no CONNECTED in time") from None
        except (OSError, ProtocolError) as exc:
            raise BrokerUnreachable(address, str(exc) or type(exc).__name__) from exc
        log.info("proxy_link_opened", broker=address)
        return cls(address, reader, writer, decoder, limits)

    @property
    def is_open(self) -> bool:
        return self._open

    async def request(self, command: pb.BaseCommand) -> pb.BaseCommand:
        """Send ``command`` under a request id of the link's own; return the broker's answer
        (whose request id is the link's: the caller puts its client's back)."""
        name = T.Type.Name(command.type)
        timeout_s = self._limits.operation_timeout_s
        try:
            async with asyncio.timeout(timeout_s):
                async with self._slots:
                    if not self._open:
                        raise BrokerUnreachable(self.address, "connection closed")
                    request_id = next(self._ids)
                    command_body(command).request_id = request_id  # type: ignore[attr-defined]
                    future = asyncio.get_running_loop().create_future()
                    self._pending[request_id] = future
                    try:
                        self._writer.write(encode_command(command))
                        reply: pb.BaseCommand = await future
                        return reply
                    finally:
                        self._pending.pop(request_id, None)
        except TimeoutError:
            raise BrokerRequestTimeout(self.address, name, timeout_s) from None

    async def _read(self) -> None:
        try:
            while True:
                for frame in await read_frame(self._reader, self._decoder):
                    self._dispatch(frame.command)
        except (ConnectionError, ProtocolError, asyncio.IncompleteReadError) as exc:
            log.info("proxy_link_closed", broker=self.address, reason=str(exc))
        finally:
            self._shut("connection closed")

    def _dispatch(self, command: pb.BaseCommand) -> None:
        if command.type == T.PING:
            self._writer.write(encode_command(commands.pong()))
            return
        if command.type == T.PONG:
            return
        request_id = getattr(command_body(command), "request_id", None)
        future = self._pending.get(request_id) if isinstance(request_id, int) else None
        if future is not None and not future.done():
            future.set_result(command)

    def abort(self, reason: str) -> None:
        """Close now: every pending request fails with BrokerUnreachable."""
        self._shut(reason)

    def _shut(self, reason: str) -> None:
        self._open = False
        for future in self._pending.values():
            if not future.done():
                future.set_exception(BrokerUnreachable(self.address, reason))
        self._pending.clear()
        self._writer.close()

    async def close(self) -> None:
        self._shut("link closed by the proxy")
        await cancel_and_wait(self._task)


async def _await_connected(
    reader: asyncio.StreamReader, decoder: FrameDecoder, address: str
) -> None:
    while True:
        for frame in await read_frame(reader, decoder):
            if frame.command.type == T.CONNECTED:
                return
            if frame.command.type == T.ERROR:
                raise BrokerUnreachable(address, frame.command.error.message)
            raise BrokerUnreachable(address, f"{T.Type.Name(frame.command.type)} before CONNECTED")


class BrokerLinks:
    """One :class:`BrokerLink` per broker, opened on first use (module docstring)."""

    def __init__(
        self,
        limits: RelayLimits,
        dial: BrokerDial | None = None,
        credential: BrokerCredential | None = None,
    ) -> None:
        self._limits = limits
        self._dial = dial
        self._credential = credential
        self._links: dict[str, BrokerLink] = {}
        self._opening: dict[str, asyncio.Lock] = {}

    async def get(self, address: str) -> BrokerLink:
        link = self._links.get(address)
        if link is not None and link.is_open:
            return link
        lock = self._opening.setdefault(address, asyncio.Lock())
        async with lock:
            link = self._links.get(address)
            if link is None or not link.is_open:
                link = await BrokerLink.open(address, self._limits, self._dial, self._credential)
                self._links[address] = link
            return link

    async def request(self, address: str, command: pb.BaseCommand) -> pb.BaseCommand:
        return await (await self.get(address)).request(command)

    def drop(self, address: str) -> None:
        """Close the link to a broker that left (its pending requests fail at once)."""
        link = self._links.pop(address, None)
        if link is not None:
            link.abort("broker unregistered")

    async def close(self) -> None:
        links, self._links = list(self._links.values()), {}
        for link in links:
            with contextlib.suppress(Exception):
                await link.close()
