"""One client connection to the proxy: the handshake, then lookups or a relay to a broker.

Like Pulsar's ProxyConnection. The first frame must be CONNECT, complete within
``handshake_timeout_s`` and no larger than the frame limit; anything else closes the
connection (garbage, a client that never finishes, a slow-loris). Then one of two modes:

* **lookup** (no ``proxy_to_broker_url``): the proxy answers CONNECTED itself and serves the
  client's lookups (:mod:`.lookup`): LOOKUP, PARTITIONED_METADATA, GET_TOPICS_OF_NAMESPACE,
  GET_SCHEMA, PING. Frames are decoded here (few and small). At most
  :data:`MAX_REQUESTS_PER_CONNECTION` requests run at once; beyond that the proxy stops
  reading the socket until one finishes.
* **relay** (``proxy_to_broker_url = host:port``): the address must be a registered broker's
  (no open relay: anything else is refused with ``ERROR(NotAllowedError)`` instead of
  CONNECTED). The proxy connects to it, sends the client's CONNECT on its behalf (client
  version, protocol version, feature flags, auth method and data, also as
  ``original_auth_*``, plus ``proxy_version``), passes the broker's CONNECTED to the client
  unchanged (so both ends agree on the protocol version) or its ERROR, and then hands both
  sockets to :mod:`.relay`, which moves bytes without decoding them. Bytes either side sent
  past its handshake frame are passed on at the switch. The handshake pieces are in
  :mod:`.handshake`.

Authentication (``authentication_enabled`` on the proxy): the CONNECT is authenticated here,
with the same providers as a broker's; a bad credential gets ``ERROR(AuthenticationError)`` and
the connection closes. The client's role then travels to the brokers as ``original_principal``
(relay CONNECTs and the lookups asked for it), next to the proxy's own credential
(:mod:`.credentials`). Without it the proxy passes the client's credential on for the broker to
check.

Bounds: before the handshake ends a connection buffers at most one frame; the socket is not
read while the broker handshake runs. Keep-alive (lookup mode): after ``keep_alive_interval_s``
without a byte from the client the proxy sends PING, and closes the connection when the next
interval passes in silence too (a relay carries the client's and the broker's own PINGs).

Concurrency: asyncio protocol callbacks on the proxy's loop; the broker handshake and lookup
requests run as tasks the connection owns (cancelled when it closes).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from magnetar.authentication import AuthenticationFailed, AuthenticationService
from magnetar.errors import MagnetarError
from magnetar.protocol import commands
from magnetar.protocol.errors import ProtocolError, server_error_for
from magnetar.protocol.frame import (
    FrameDecoder,
    command_body,
    encode_command,
)
from magnetar.protocol.version import PeerFeatures, server_feature_flags
from magnetar.proxy.broker_dial import BrokerDial
from magnetar.proxy.broker_link import PROXY_VERSION
from magnetar.proxy.credentials import BrokerCredential
from magnetar.proxy.discovery import BrokerDiscovery, address_of
from magnetar.proxy.errors import NotARegisteredBroker
from magnetar.proxy.handshake import BrokerHandshake, FirstFrame, broker_connect, refusal
from magnetar.proxy.lookup import ProxyLookup
from magnetar.proxy.relay import Relay, RelayEnd, close_gracefully, set_limits
from magnetar.proxy.settings import RelayLimits
from magnetar.proxy.stats import ProxyStats
from magnetar.tasks import TaskSet
from magnetar.telemetry import get_logger
from magnetar.tls import peer_certificate_of
from magnetar.wire import pulsar_api_pb2 as pb

log = get_logger(__name__)

T = pb.BaseCommand
MAX_REQUESTS_PER_CONNECTION = 1000
FORWARDED = frozenset({T.PARTITIONED_METADATA, T.GET_TOPICS_OF_NAMESPACE, T.GET_SCHEMA})


@dataclass
class ProxyContext:
    """What every client connection of one proxy shares."""

    discovery: BrokerDiscovery
    lookup: ProxyLookup
    limits: RelayLimits
    stats: ProxyStats
    max_message_size: int
    tasks: TaskSet
    relays: dict[str, set[Relay]] = field(default_factory=dict)
    authentication: AuthenticationService | None = None
    credential: BrokerCredential | None = None
    forward_credentials: bool = False
    dial: BrokerDial = field(default_factory=lambda: BrokerDial(None, None))  # plain by default

    def relay_closed(self, relay: Relay) -> None:
        self.stats.active_relays -= 1
        held = self.relays.get(relay.broker_id)
        if held is not None:
            held.discard(relay)
            if not held:
                del self.relays[relay.broker_id]

    def relay_opened(self, relay: Relay) -> None:
        self.stats.active_relays += 1
        self.relays.setdefault(relay.broker_id, set()).add(relay)

    def drop_relays_to(self, broker_id: str) -> int:
        relays = self.relays.pop(broker_id, set())
        for relay in list(relays):
            relay.close()
        return len(relays)


class _State(enum.Enum):
    HANDSHAKE = "handshake"
    CONNECTING = "connecting"  # relay: waiting for the broker's CONNECTED
    LOOKUP = "lookup"
    RELAY = "relay"
    CLOSED = "closed"


class ProxyConnection(asyncio.Protocol):
    """One client connection (module docstring)."""

    def __init__(self, ctx: ProxyContext, on_closed: Callable[[ProxyConnection], None]) -> None:
        self._ctx = ctx
        self._on_closed = on_closed
        self._state = _State.HANDSHAKE
        self._transport: asyncio.Transport | None = None
        self._first = FirstFrame(ctx.limits.max_frame_size)
        self._early: bytearray = bytearray()  # client bytes sent while CONNECTING
        self._decoder: FrameDecoder | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._requests = 0
        self._paused = False  # reading paused: too many requests in flight
        self._unread = False  # reading paused: the client does not take its answers
        self._stall: asyncio.TimerHandle | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._last_received = 0.0
        self._pinged = False
        self._role: str | None = None  # the client's, when the proxy authenticated it
        self.address = "?"
        # The client's certificate on the TLS port (getpeercert()'s dict), None otherwise: the
        # input of the proxy's own mutual-TLS authentication of its clients.
        self.peer_certificate: dict[str, Any] | None = None

    # ------------------------------------------------------------------ life cycle
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        peer = transport.get_extra_info("peername")
        self.address = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self.peer_certificate = peer_certificate_of(transport.get_extra_info)
        set_limits(transport, self._ctx.limits.buffer_bytes)
        self._ctx.stats.new_connections += 1
        self._ctx.stats.active_connections += 1
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(self._ctx.limits.handshake_timeout_s, self._handshake_expired)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._state is not _State.RELAY:  # a relay's end reports its own
            self._finish()

    def _finish(self) -> None:
        if self._state is _State.CLOSED:
            return
        self._state = _State.CLOSED
        self._ctx.stats.active_connections -= 1
        for timer in (self._timer, self._stall):
            if timer is not None:
                timer.cancel()
        for task in list(self._tasks):
            task.cancel()  # each ends by itself: a request's answer goes nowhere now
        self._on_closed(self)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` as this connection's task: held until done, cancelled on close; its
        failure is logged by the context's task set."""
        task = self._ctx.tasks.spawn(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def close(self) -> None:
        """Close the connection (a relay: both sides)."""
        if self._transport is not None:
            self._transport.abort()

    def _handshake_expired(self) -> None:
        if self._state in (_State.HANDSHAKE, _State.CONNECTING):
            log.info("proxy_handshake_timeout", client=self.address, state=self._state.value)
            self._reject_quietly()

    def _reject_quietly(self) -> None:
        self._ctx.stats.rejected_connections += 1
        if self._transport is not None:
            self._transport.abort()

    def _refuse(self, code: pb.ServerError.ValueType, message: str) -> None:
        """ERROR instead of CONNECTED, then close (the client reconnects and looks up again)."""
        self._ctx.stats.rejected_connections += 1
        log.info("proxy_connect_refused", client=self.address, reason=message)
        if self._transport is not None and not self._transport.is_closing():
            error = commands.error(commands.BROKER_REQUEST_ID, code, message)
            self._transport.write(encode_command(error))
            close_gracefully(self._transport)

    # ------------------------------------------------------------------ bytes in
    def data_received(self, data: bytes) -> None:
        state = self._state
        if state is _State.LOOKUP:
            self._lookup_bytes(data)
        elif state is _State.HANDSHAKE:
            self._handshake_bytes(data)
        elif state is _State.CONNECTING:
            self._early += data
            if len(self._early) > self._ctx.limits.max_frame_size:
                self._reject_quietly()

    def _handshake_bytes(self, data: bytes) -> None:
        try:
            first = self._first.feed(data)
        except ProtocolError as exc:
            log.info("proxy_bad_handshake", client=self.address, error=str(exc))
            self._reject_quietly()
            return
        if first is None:
            return
        frame, _, rest = first
        if frame.type != T.CONNECT:
            log.info("proxy_command_before_connect", client=self.address, type=frame.type)
            self._reject_quietly()
            return
        connect = frame.command.connect
        if not self._authenticate(connect):
            return
        if connect.HasField("proxy_to_broker_url"):
            self._state = _State.CONNECTING
            self._early += rest
            assert self._transport is not None
            self._transport.pause_reading()
            self._spawn(self._open_relay(connect))
        else:
            self._start_lookups(connect, rest)

    def _authenticate(self, connect: pb.CommandConnect) -> bool:
        """With proxy authentication: the client's role, or ERROR(AuthenticationError)."""
        service = self._ctx.authentication
        if service is None:
            return True
        try:
            self._role = service.authenticate_connect(connect, self.peer_certificate).role
        except AuthenticationFailed as exc:
            self._ctx.stats.rejected_connections += 1
            log.info("proxy_authentication_failed", client=self.address, reason=exc.reason)
            if self._transport is not None and not self._transport.is_closing():
                error = commands.error(
                    commands.BROKER_REQUEST_ID, pb.AuthenticationError, exc.reason
                )
                self._transport.write(encode_command(error))
                close_gracefully(self._transport)
            return False
        return True

    # ------------------------------------------------------------------ lookup mode
    def _start_lookups(self, connect: pb.CommandConnect, rest: bytes) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._state = _State.LOOKUP
        features = PeerFeatures.from_connect(connect)
        self._write(
            commands.connected(
                server_version=PROXY_VERSION,
                protocol_version=features.protocol_version,
                max_message_size=self._ctx.max_message_size,
                feature_flags=server_feature_flags(),
            )
        )
        self._decoder = FrameDecoder(max_frame_size=self._ctx.limits.max_frame_size)
        loop = asyncio.get_running_loop()
        self._last_received = loop.time()
        self._timer = loop.call_later(self._ctx.limits.keep_alive_interval_s, self._keepalive)
        if rest:
            self._lookup_bytes(rest)

    def _write(self, command: pb.BaseCommand) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.write(encode_command(command))

    def _keepalive(self) -> None:
        if self._state is not _State.LOOKUP:
            return
        loop = asyncio.get_running_loop()
        interval = self._ctx.limits.keep_alive_interval_s
        idle = loop.time() - self._last_received
        if idle >= interval:
            if self._pinged:
                log.info("proxy_keepalive_timeout", client=self.address, idle_s=idle)
                self.close()
                return
            self._write(commands.ping())
            self._pinged = True
        self._timer = loop.call_later(interval, self._keepalive)

    def _lookup_bytes(self, data: bytes) -> None:
        self._last_received = asyncio.get_running_loop().time()
        self._pinged = False
        decoder = self._decoder
        assert decoder is not None
        try:
            decoder.feed(data)
        except ProtocolError as exc:
            log.info("proxy_protocol_error", client=self.address, error=str(exc))
            self._reject_quietly()
            return
        while self._state is _State.LOOKUP:
            try:
                for frame in decoder.frames():
                    self._lookup_command(frame.command)
                return
            except ProtocolError as exc:
                if exc.fatal:
                    self._reject_quietly()
                    return
                log.info("proxy_frame_rejected", client=self.address, error=str(exc))
                self._write(commands.error(commands.BROKER_REQUEST_ID, pb.UnknownError, str(exc)))

    def _lookup_command(self, cmd: pb.BaseCommand) -> None:
        kind = cmd.type
        if kind == T.PING:
            self._write(commands.pong())
        elif kind == T.PONG:
            pass
        elif kind == T.LOOKUP:
            self._request(self._ctx.lookup.lookup(cmd.lookup_topic, self._role))
        elif kind in FORWARDED:
            self._request(self._ctx.lookup.forward(cmd, self._role))
        else:
            name = T.Type.Name(kind)
            request_id = getattr(command_body(cmd), "request_id", commands.BROKER_REQUEST_ID)
            self._write(
                commands.error(
                    request_id,
                    pb.NotAllowedError,
                    f"{name} is not served on a lookup connection: connect through the proxy "
                    "with proxy_to_broker_url set to the broker a lookup named",
                )
            )

    def _request(self, work: Any) -> None:
        self._requests += 1
        if self._requests >= MAX_REQUESTS_PER_CONNECTION and self._transport is not None:
            self._transport.pause_reading()
            self._paused = True
        self._spawn(self._answer(work))

    async def _answer(self, work: Any) -> None:
        try:
            self._write(await work)
        finally:
            self._requests -= 1
            if self._paused and self._requests < MAX_REQUESTS_PER_CONNECTION // 2:
                self._paused = False
                self._resume()

    def _resume(self) -> None:
        transport = self._transport
        if (
            self._state is _State.LOOKUP  # a connecting client stays paused until its relay
            and transport is not None
            and not transport.is_closing()
            and not (self._paused or self._unread)
        ):
            transport.resume_reading()

    # A lookup client that leaves its answers unread: stop taking its requests, and drop it
    # after the write-stall timeout (a relay's ends have their own, in .relay).
    def pause_writing(self) -> None:
        if self._transport is None:
            return
        self._unread = True
        self._transport.pause_reading()
        loop = asyncio.get_running_loop()
        stall_s = self._ctx.limits.write_stall_timeout_s
        self._stall = loop.call_later(stall_s, self._stalled)

    def resume_writing(self) -> None:
        self._unread = False
        if self._stall is not None:
            self._stall.cancel()
            self._stall = None
        self._resume()

    def _stalled(self) -> None:
        self._ctx.stats.dropped_slow += 1
        log.info("proxy_lookup_client_stalled", client=self.address)
        self.close()

    # ------------------------------------------------------------------ relay mode
    async def _open_relay(self, connect: pb.CommandConnect) -> None:
        address = address_of(connect.proxy_to_broker_url)
        limits = self._ctx.limits
        discovery = self._ctx.discovery
        broker = discovery.by_service_address(address)
        if broker is None:  # registered a moment ago? the watch may lag: ask the store once
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(limits.operation_timeout_s):
                    await discovery.refresh()
            broker = discovery.by_service_address(address)
        if broker is None:
            refused = NotARegisteredBroker(connect.proxy_to_broker_url)
            self._refuse(server_error_for(refused), str(refused))
            return
        loop = asyncio.get_running_loop()
        forwarded = broker_connect(
            connect,
            client_role=self._role,
            credential=self._ctx.credential,
            forward_credentials=self._role is None or self._ctx.forward_credentials,
        )
        end = BrokerHandshake(forwarded, limits.buffer_bytes)
        # The broker's default listener (or its TLS one, with tls_enabled_with_broker): a named
        # one the client used may be an address that only means something outside the cluster.
        transport: asyncio.Transport | None = None
        try:
            target = self._ctx.dial.target(broker.service_address)
            async with asyncio.timeout(limits.connect_timeout_s):
                made, _ = await loop.create_connection(
                    lambda: end,
                    target.host,
                    target.port,
                    ssl=target.ssl,
                    server_hostname=target.server_hostname,
                )
                assert isinstance(made, asyncio.Transport)
                transport = made
            async with asyncio.timeout(limits.handshake_timeout_s):
                connected = await end.connected
        except BaseException as exc:  # also cancelled: the client went away meanwhile
            end.connected.cancel()  # nobody will read its outcome now
            if transport is not None:
                transport.abort()
            if not isinstance(exc, (OSError, TimeoutError, MagnetarError)):
                raise
            self._refuse(*refusal(address, exc))
            return
        self._switch_to_relay(transport, broker.broker_id, connected, end.take_rest())

    def _switch_to_relay(
        self, broker: asyncio.Transport, broker_id: str, connected: bytes, rest: bytes
    ) -> None:
        client = self._transport
        if client is None or client.is_closing() or self._state is not _State.CONNECTING:
            broker.abort()
            return
        if broker.is_closing():
            self._refuse(pb.ServiceNotReady, f"broker {broker_id} closed the connection")
            return
        if self._timer is not None:
            self._timer.cancel()
        ctx = self._ctx

        def closed(relay: Relay) -> None:
            ctx.relay_closed(relay)
            self._finish()

        relay = Relay(
            client, broker, broker_id, ctx.stats, ctx.limits.write_stall_timeout_s, closed
        )
        self._state = _State.RELAY
        ctx.relay_opened(relay)
        client.set_protocol(RelayEnd(relay, client, from_client=True))
        broker.set_protocol(RelayEnd(relay, broker, from_client=False))
        client.write(connected + rest)
        if self._early:
            broker.write(bytes(self._early))
            self._early = bytearray()
        client.resume_reading()
        broker.resume_reading()
        log.info("proxy_relay_opened", client=self.address, broker=broker_id)
