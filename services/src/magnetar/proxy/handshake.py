"""The handshakes of a relayed connection: the client's first frame, the CONNECT the proxy sends
the broker for it, and the broker side until its CONNECTED.

Pure pieces (:class:`FirstFrame`, :func:`broker_connect`, :func:`refusal`) and one asyncio
protocol (:class:`BrokerHandshake`) that :mod:`.connection` installs on the broker socket until
:mod:`.relay` takes both sockets over. What is forwarded, as Pulsar's proxy does it: the
client's CONNECT minus ``proxy_to_broker_url``, with ``proxy_version`` and the client's auth
method and data repeated as ``original_auth_method`` / ``original_auth_data``; back, the
broker's CONNECTED frame byte for byte (so client and broker agree on the protocol version),
or its ERROR's code and message.

Bounds: a first frame is refused as soon as its 4-byte size exceeds the limit; the broker side
buffers at most ``buffer_bytes`` after its CONNECTED before it stops reading. Concurrency:
on the proxy's loop.
"""

from __future__ import annotations

import asyncio
import struct

from magnetar.errors import MagnetarError
from magnetar.protocol import commands
from magnetar.protocol.errors import ProtocolError, server_error_for
from magnetar.protocol.frame import Frame, encode_command, parse_frame_body
from magnetar.proxy.broker_link import PROXY_VERSION
from magnetar.proxy.credentials import BrokerCredential
from magnetar.proxy.errors import BrokerUnreachable
from magnetar.proxy.relay import set_limits
from magnetar.wire import pulsar_api_pb2 as pb

T = pb.BaseCommand
_U32 = struct.Struct(">I")
HANDSHAKE_FRAME_LIMIT = 64 * 1024  # a broker's CONNECTED or ERROR is a few dozen bytes


class FirstFrame:
    """Buffers bytes until one whole frame is in; bounded by the frame limit."""

    def __init__(self, max_frame_size: int) -> None:
        self._max = max_frame_size
        self._buffer = bytearray()

    def feed(self, data: bytes) -> tuple[Frame, bytes, bytes] | None:
        """The first frame, its bytes and the bytes after it, once complete; ProtocolError
        if bad."""
        self._buffer += data
        if len(self._buffer) < 4:
            return None
        (total,) = _U32.unpack_from(self._buffer, 0)
        if total > self._max or total < 4:
            raise BadHandshake(f"first frame announces {total} bytes")
        if len(self._buffer) < 4 + total:
            return None
        raw = bytes(self._buffer[: 4 + total])
        return parse_frame_body(raw[4:]), raw, bytes(self._buffer[4 + total :])


class BadHandshake(ProtocolError):
    """The first frame cannot be one: its size is impossible."""

    fatal = True


def refusal(address: str, exc: BaseException) -> tuple[pb.ServerError.ValueType, str]:
    """The ERROR code and message a client gets when its relay could not be opened."""
    if isinstance(exc, BrokerRefused):
        return exc.code, str(exc)
    if not isinstance(exc, MagnetarError):
        exc = BrokerUnreachable(address, repr(exc))
    return server_error_for(exc), str(exc)


def broker_connect(
    connect: pb.CommandConnect,
    *,
    client_role: str | None = None,
    credential: BrokerCredential | None = None,
    forward_credentials: bool = True,
) -> pb.BaseCommand:
    """The CONNECT the proxy sends a broker for a client (module docstring).

    When the proxy authenticated the client (``client_role``), the CONNECT carries the proxy's
    own ``credential`` (if it has one) and the client's role as ``original_principal``; the
    client's credential goes along as ``original_auth_*`` only with ``forward_credentials``.
    Otherwise the client's credential is the CONNECT's, for the broker to authenticate."""
    forwarded = pb.CommandConnect()
    forwarded.CopyFrom(connect)
    forwarded.ClearField("proxy_to_broker_url")
    forwarded.proxy_version = PROXY_VERSION
    if forward_credentials:
        if connect.HasField("auth_method_name"):
            forwarded.original_auth_method = connect.auth_method_name
        if connect.HasField("auth_data"):
            forwarded.original_auth_data = connect.auth_data.decode(errors="replace")
    if client_role is not None:
        forwarded.original_principal = client_role
        forwarded.ClearField("auth_method_name")
        forwarded.ClearField("auth_data")
        if credential is not None:
            forwarded.auth_method_name = credential.method
            forwarded.auth_data = credential.data
    return commands.wrap(T.CONNECT, forwarded)


class BrokerHandshake(asyncio.Protocol):
    """The broker side of a relay until the switch: sends the client's CONNECT, then waits for
    one frame. :attr:`connected` resolves to CONNECTED's bytes; what the broker sends after it
    before the switch is kept (bounded) for :meth:`take_rest`."""

    def __init__(self, connect: pb.BaseCommand, buffer_bytes: int) -> None:
        self._connect = encode_command(connect)
        self._buffer_bytes = buffer_bytes
        self._first = FirstFrame(HANDSHAKE_FRAME_LIMIT)
        self._rest = bytearray()
        self._transport: asyncio.Transport | None = None
        self.connected: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        set_limits(transport, self._buffer_bytes)
        transport.write(self._connect)

    def take_rest(self) -> bytes:
        rest, self._rest = bytes(self._rest), bytearray()
        return rest

    def data_received(self, data: bytes) -> None:
        if self.connected.done():
            self._rest += data
            if len(self._rest) > self._buffer_bytes and self._transport is not None:
                self._transport.pause_reading()  # resumed by the relay's switch
            return
        try:
            first = self._first.feed(data)
        except ProtocolError as exc:
            self.connected.set_exception(BrokerUnreachable("broker", str(exc)))
            return
        if first is None:
            return
        frame, raw, rest = first
        if frame.type == T.CONNECTED:
            self._rest += rest
            self.connected.set_result(raw)
        elif frame.type == T.ERROR:
            error = frame.command.error
            self.connected.set_exception(BrokerRefused(error.error, error.message))
        else:
            name = T.Type.Name(frame.type)
            self.connected.set_exception(BrokerUnreachable("broker", f"{name} before CONNECTED"))

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.connected.done():
            self.connected.set_exception(BrokerUnreachable("broker", "closed during handshake"))


class BrokerRefused(MagnetarError):
    """The broker answered the CONNECT with ERROR; the client gets the same code."""

    def __init__(self, code: pb.ServerError.ValueType, message: str) -> None:
        super().__init__(message)
        self.code = code
