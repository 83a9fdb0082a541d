"""ServerCnx: one client connection of the binary protocol (Pulsar's ServerCnx).

The reader loop feeds bytes to a :class:`~magnetar.protocol.frame.FrameDecoder` and handles
frames in arrival order (its ``broker_frames``: each SEND, and each ACK of whole entries, read
from the wire as the few fields the broker uses, :mod:`magnetar.protocol.hand_decoded`). Fast
commands (FLOW, SEND, PING, ...) are handled inline so their order is kept (consecutive SENDs
of one producer in one read are handed over as one run, before any other frame is handled);
requests that wait on storage (PRODUCER, SUBSCRIBE, SEEK, ...) run as tasks the connection owns,
answered by request id. The connection itself handles
CONNECT, PING/PONG, LOOKUP and PARTITIONED_METADATA; producer commands go to its
:class:`~magnetar.broker.producer_requests.ProducerRequests` and consumer commands to its
:class:`~magnetar.broker.consumer_requests.ConsumerRequests` (GET_SCHEMA and GET_OR_CREATE_SCHEMA
to its :class:`~magnetar.broker.schemas.requests.SchemaRequests`). Each of the two owns its registry
by id and sees the connection only as a :class:`~magnetar.broker.transport_cnx.TransportCnx`;
the connection reaches them only through their methods.

Frame errors: a fatal one (framing lost, frame over the size limit) closes the connection; a
frame-local one is answered — ``SEND_ERROR(ChecksumError)`` for a SEND with a bad checksum (the
one SEND_ERROR the C++ client survives), ``ERROR`` otherwise — and the connection goes on.
Before CONNECT only CONNECT is accepted; anything else closes the connection.

Writes: :meth:`ServerCnx.write` queues a frame and the queue is flushed once per loop iteration
with one ``writelines`` (receipts, MESSAGE frames and replies of one iteration share a syscall;
:meth:`ServerCnx.write_parts` queues a MESSAGE's head and stored bytes without joining them);
``close`` and ``drain`` flush first, so frame order is the write order.

Bounds: at most ``max_pending_sends_per_connection`` SENDs in flight (counted by
ProducerRequests); beyond that the reader stops reading (TCP backpressure on the producer).
Keep-alive: a PING after an idle interval, and the connection is closed when the client stays
silent for two intervals.

Stop (:meth:`ServerCnx.finish`, from a stopping broker's listener): the connection takes no
further frame (what the client sends from then on is read and dropped: it resends what is not
acknowledged), waits until every SEND it took has been answered — its entry may already be
stored, and a stored entry the client does not hear about is resent and stored twice (for a
chunk, the C++ consumer then drops the whole message) — writes the answers, half-closes (FIN
after the answers) and ends when the client closes its side; the caller bounds it in time.

Security (with ``authentication_enabled``): CONNECT is authenticated by
:class:`~magnetar.broker.connection_auth.ConnectionAuth` (``ERROR(AuthenticationError)`` and
close on failure, as Pulsar's broker does), a refresh task challenges expired credentials, and
PRODUCER, SUBSCRIBE, LOOKUP, PARTITIONED_METADATA and GET_TOPICS_OF_NAMESPACE are authorized
for the connection's caller through :meth:`ServerCnx.authorize` (``AuthorizationError``). The
``tls`` provider reads :attr:`ServerCnx.peer_certificate`, the TLS port's client certificate.

Concurrency: everything on the broker's loop; the connection's tasks are cancelled on close.
Created and run by :class:`~magnetar.broker.server.BrokerServer`, one per accepted socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Coroutine
from typing import Any

from magnetar.authentication import AuthenticationFailed
from magnetar.authorization import LOOKUP, Caller
from magnetar.broker.connection_auth import REFRESH_AUTH_DATA, ConnectionAuth, RefreshAction
from magnetar.broker.consumer_requests import ConsumerRequests
from magnetar.broker.errors import ServiceNotReady
from magnetar.broker.producer_requests import ProducerRequests
from magnetar.broker.schemas.requests import SchemaRequests
from magnetar.broker.service import SERVER_VERSION, BrokerService
from magnetar.broker.transport_cnx import ErrorReply, RequestWork
from magnetar.chunk_reader import ByteReader
from magnetar.errors import MagnetarError
from magnetar.naming import InvalidTopicName, NamespaceName, TopicName
from magnetar.protocol import commands
from magnetar.protocol.errors import ChecksumMismatch, ProtocolError, server_error_for
from magnetar.protocol.frame import (
    FRAME_SIZE_PADDING,
    Frame,
    FrameDecoder,
    command_body,
    encode_command,
)
from magnetar.protocol.hand_decoded import AckFrame, SendFrame
from magnetar.protocol.version import PeerFeatures, server_feature_flags
from magnetar.tasks import TaskSet
from magnetar.telemetry import get_logger
from magnetar.tls import peer_certificate_of
from magnetar.wire import pulsar_api_pb2 as pb

log = get_logger(__name__)

T = pb.BaseCommand
_READ_CHUNK = 256 * 1024
_MAX_TASKS = 10_000
_connection_ids = itertools.count(1)


class ServerCnx:
    """One client connection: the reader loop, the write queue, keep-alive and the
    connection's tasks; a :class:`~magnetar.broker.transport_cnx.TransportCnx` for its handlers."""

    def __init__(
        self,
        service: BrokerService,
        reader: ByteReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        self._service = service
        self.connection_id = next(_connection_ids)
        self._reader = reader
        self._writer = writer
        self._loop = asyncio.get_running_loop()
        self._out: list[bytes] = []
        peer = writer.get_extra_info("peername")
        self._address = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        # The TLS handshake is over before a connection is served: the client's certificate.
        self._peer_certificate = peer_certificate_of(writer.get_extra_info)
        config = service.config
        self._decoder = FrameDecoder(max_frame_size=config.max_message_size + FRAME_SIZE_PADDING)
        self._features: PeerFeatures | None = None
        self._open = True
        self._taking = True  # frames are handled; False once closed or finishing
        self._read_ended = asyncio.Event()
        self._tasks = TaskSet(f"connection {self._address}")  # logs a task's unexpected error
        self._task_slots = asyncio.Semaphore(_MAX_TASKS)
        self._last_received = self._loop.time()
        self._producers = ProducerRequests(self, service)
        self._consumers = ConsumerRequests(self, service)
        self._schemas = SchemaRequests(self, service.schemas)
        security = service.security
        self._auth = (
            None
            if security.authentication is None
            else ConnectionAuth(security.authentication, security.rules)
        )
        self._caller: Caller | None = None

    # ------------------------------------------------------------------ security
    @property
    def caller(self) -> Caller | None:
        """Who the connection acts for once authenticated; None without authentication."""
        return self._caller

    async def authorize(
        self, topic: TopicName, action: str, subscription: str | None = None
    ) -> None:
        await self._service.security.check_topic(self._caller, topic, action, subscription)

    async def authorize_namespace(self, namespace: NamespaceName, action: str) -> None:
        await self._service.security.check_namespace(self._caller, namespace, action)

    def _request_caller(self, original_principal: str) -> Caller | None:
        """Who a lookup is for: a proxy's shared lookup connection names its client in the
        request's ``original_principal``; anyone else's connection acts for itself."""
        caller = self._caller
        rules = self._service.security.rules
        if caller is None or not original_principal or caller.role not in rules.proxy_roles:
            return caller
        if original_principal in rules.proxy_roles:
            return caller
        return Caller(caller.role, original_principal)

    # ------------------------------------------------------------------ TransportCnx
    @property
    def address(self) -> str:
        return self._address

    @property
    def peer_certificate(self) -> dict[str, Any] | None:
        """The client's certificate as ``ssl.SSLSocket.getpeercert()`` gives it; None on the
        plain port or when the client presented none (the mutual-TLS authentication's input)."""
        return self._peer_certificate

    @property
    def features(self) -> PeerFeatures:
        if self._features is None:
            raise ServiceNotReady("not connected")
        return self._features

    @property
    def is_open(self) -> bool:
        return self._open

    def write(self, frame: bytes) -> None:
        """Queue ``frame``; the frames of one loop iteration go out in one socket write."""
        if self._open:
            if not self._out:
                self._loop.call_soon(self._flush)
            self._out.append(frame)

    def write_parts(self, head: bytes, tail: bytes) -> None:
        """:meth:`write` of the frame ``head + tail`` without building it: the socket write
        joins the loop iteration's frames anyway, so a payload is copied once, not twice."""
        if self._open:
            if not self._out:
                self._loop.call_soon(self._flush)
            self._out += (head, tail)

    def write_frames(self, parts: list[bytes]) -> None:
        """:meth:`write_parts` for a run of frames given as one list of parts."""
        if self._open and parts:
            if not self._out:
                self._loop.call_soon(self._flush)
            self._out += parts

    def _flush(self) -> None:
        out, self._out = self._out, []
        if out and self._open:
            self._writer.writelines(out)

    def write_command(self, command: pb.BaseCommand) -> None:
        self.write(encode_command(command))

    async def drain(self) -> None:
        if self._open:
            self._flush()
            with contextlib.suppress(ConnectionError):
                await self._writer.drain()

    def forget_producer(self, producer_id: int) -> None:
        self._producers.forget(producer_id)

    def forget_consumer(self, consumer_id: int) -> None:
        self._consumers.forget(consumer_id)

    # ------------------------------------------------------------------ life cycle
    async def run(self) -> None:
        """Serve until the client goes away or a fatal protocol error; then clean up."""
        timers = [asyncio.create_task(self._keepalive(), name=f"keepalive-{self._address}")]
        if self._auth is not None:
            timers.append(
                asyncio.create_task(self._auth_refresh(), name=f"auth-refresh-{self._address}")
            )
        try:
            await self._read_loop()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._read_ended.set()
            for timer in timers:
                timer.cancel()
            await asyncio.wait(timers)
            await self._cleanup()

    async def _read_loop(self) -> None:
        while self._open:
            data = await self._reader.read(_READ_CHUNK)
            if not data:
                return
            self._last_received = self._loop.time()
            if not self._taking:
                continue  # finishing: dropped unanswered (the client resends it)
            try:
                self._decoder.feed(data)
            except ProtocolError as exc:
                self._fatal(exc)
                return
            producers = self._producers
            while self._taking:
                try:
                    for frame in self._decoder.broker_frames():
                        # A SEND with a free slot is handled without a coroutine per frame;
                        # a run of them (one producer's) is handed over together.
                        if isinstance(frame, SendFrame):
                            if self._features is not None and producers.take_send(frame):
                                continue  # queued: nothing here could have closed the cnx
                            producers.flush_sends()
                            if not self._takes_frames():  # closed while taking it
                                if not self.is_open:
                                    return
                                break
                            await self._send(frame)
                        elif isinstance(frame, AckFrame):
                            producers.flush_sends()
                            await self._ack(frame)
                        else:
                            producers.flush_sends()
                            await self._handle(frame)
                        if not self._takes_frames():  # closed, or finishing
                            producers.flush_sends()
                            if not self.is_open:
                                return
                            break
                    producers.flush_sends()
                    break
                except ProtocolError as exc:
                    producers.flush_sends()  # the SENDs before the bad frame go first
                    if exc.fatal:
                        self._fatal(exc)
                        return
                    self._frame_error(exc)

    def _fatal(self, exc: ProtocolError) -> None:
        log.warning("connection_protocol_error", client=self._address, error=str(exc))
        self.close()

    def _frame_error(self, exc: ProtocolError) -> None:
        log.info("frame_rejected", client=self._address, error=str(exc))
        if self._features is None:
            self.close()
            return
        if isinstance(exc, ChecksumMismatch) and exc.command.type == T.SEND:
            send = exc.command.send
            self.write_command(
                commands.send_error(send.producer_id, send.sequence_id, pb.ChecksumError, str(exc))
            )
            return
        self.write_command(commands.error(commands.BROKER_REQUEST_ID, pb.UnknownError, str(exc)))

    def close(self) -> None:
        if not self._open:
            return
        self._flush()  # frames written before close (e.g. an error reply) still go out
        self._open = False
        self._taking = False
        self._writer.close()

    def _takes_frames(self) -> bool:
        # A method, not the attribute: the reader's awaits may change it (mypy would narrow).
        return self._taking

    async def finish(self) -> None:
        """A stopping broker's close, up to the client's: take no further frame, answer every
        SEND taken, send the answers, half-close, and return when the client has closed its
        side (the caller bounds the wait and then calls :meth:`close`)."""
        if not self._open:
            return
        self._taking = False
        self._producers.stop_taking()
        await self._producers.answered()
        await self.drain()
        if self._open and self._writer.can_write_eof():  # not over TLS: it has no half-close
            self._writer.write_eof()
            await self._read_ended.wait()

    async def _cleanup(self) -> None:
        self.close()
        await self._tasks.close()
        await self._producers.release_all()
        await self._consumers.release_all()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._writer.wait_closed(), timeout=2.0)
        log.info("connection_closed", client=self._address)

    async def _keepalive(self) -> None:
        # Pulsar's keep-alive: each interval, a client that has not answered (with anything)
        # the PING sent at the previous tick is dropped; an idle one gets a PING. So a client
        # always has a whole interval to answer, however late the timer fires.
        interval = self._service.config.keep_alive_interval_s
        ping_sent_at: float | None = None
        while self._open:
            await asyncio.sleep(interval)
            now = self._loop.time()
            idle = now - self._last_received
            unanswered = ping_sent_at is not None and self._last_received < ping_sent_at
            silent_stranger = self._features is None and idle >= 2 * interval  # no CONNECT
            if unanswered or silent_stranger:
                log.info("connection_keepalive_timeout", client=self._address, idle_s=idle)
                self.close()
                self._reader.feed_eof()
                return
            ping_sent_at = None
            if idle >= interval and self._features is not None:
                self.write_command(commands.ping())
                ping_sent_at = now

    # ------------------------------------------------------------------ tasks / replies
    async def spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run ``work`` as a task of this connection (bounded in number)."""
        await self._task_slots.acquire()
        task = self._tasks.spawn(work)
        task.add_done_callback(self._task_finished)
        return task

    def _task_finished(self, _task: asyncio.Task[None]) -> None:
        self._task_slots.release()

    async def request(
        self,
        request_id: int,
        work: RequestWork,
        on_error: ErrorReply = commands.error,
    ) -> None:
        """Spawn ``work``; write its reply, or ``on_error(...)`` if it raises a MagnetarError."""

        async def run() -> None:
            try:
                reply = await work()
            except MagnetarError as exc:
                log.info("request_refused", client=self._address, error=str(exc))
                reply = on_error(request_id, server_error_for(exc), str(exc))
            if reply is not None:
                self.write_command(reply)

        await self.spawn(run())

    # ------------------------------------------------------------------ dispatch
    async def _send(self, frame: SendFrame) -> None:
        """A SEND the reader cannot hand over at once: before CONNECT, or with no free slot."""
        if self._connected(frame.type):
            await self._producers.send(frame)

    async def _ack(self, frame: AckFrame) -> None:
        if self._connected(frame.type):
            await self._consumers.ack(frame)

    def _connected(self, kind: int) -> bool:
        """Whether CONNECT came first; a command before it closes the connection."""
        if self._features is None:
            log.warning("command_before_connect", client=self._address, type=kind)
            self.close()
            return False
        return True

    async def _handle(self, frame: Frame) -> None:
        cmd = frame.command
        if self._features is None:
            if cmd.type != T.CONNECT:
                log.warning("command_before_connect", client=self._address, type=cmd.type)
                self.close()
                return
            self._connect(cmd.connect)
            return
        kind = cmd.type
        if kind == T.PING:
            self.write_command(commands.pong())
        elif kind == T.PONG:
            pass
        elif kind == T.PARTITIONED_METADATA:
            await self._partitioned_metadata(cmd.partition_metadata)
        elif kind == T.LOOKUP:
            await self._lookup(cmd.lookup_topic)
        elif kind == T.AUTH_RESPONSE:
            self._auth_response(cmd.auth_response)
        elif kind == T.CONNECT:
            self.write_command(
                commands.error(commands.BROKER_REQUEST_ID, pb.NotAllowedError, "already connected")
            )
        elif not (
            await self._producers.handle(frame)
            or await self._consumers.handle(frame)
            or await self._schemas.handle(frame)
        ):
            self._unsupported(cmd)

    def _unsupported(self, cmd: pb.BaseCommand) -> None:
        name = pb.BaseCommand.Type.Name(cmd.type)
        request_id = getattr(command_body(cmd), "request_id", commands.BROKER_REQUEST_ID)
        log.info("command_unsupported", client=self._address, command=name)
        self.write_command(
            commands.error(request_id, pb.NotAllowedError, f"{name} is not supported")
        )

    def _connect(self, connect: pb.CommandConnect) -> None:
        if self._auth is not None:
            method = connect.auth_method_name
            try:
                self._caller = self._auth.connect(connect, self.peer_certificate)
            except AuthenticationFailed as exc:
                self._service.security.count_refused(method, exc)
                self._refuse_authentication(exc, method)
                return
            self._service.security.count_accepted(method or "none")
        self._features = PeerFeatures.from_connect(connect)
        self.write_command(
            commands.connected(
                server_version=SERVER_VERSION,
                protocol_version=self._features.protocol_version,
                max_message_size=self._service.config.max_message_size,
                feature_flags=server_feature_flags(),
            )
        )
        log.info(
            "client_connected",
            client=self._address,
            client_version=connect.client_version,
            protocol_version=self._features.protocol_version,
            role=None if self._caller is None else self._caller.role,
            tls=self._writer.get_extra_info("sslcontext") is not None,
        )

    def _refuse_authentication(self, exc: AuthenticationFailed, method: str) -> None:
        # Pulsar's broker answers ERROR(AuthenticationError) and closes. The reason names what
        # was wrong with the credential, never the credential.
        log.info("authentication_failed", client=self._address, method=method, reason=exc.reason)
        self.write_command(
            commands.error(commands.BROKER_REQUEST_ID, pb.AuthenticationError, exc.reason)
        )
        self.close()

    async def _auth_refresh(self) -> None:
        """Pulsar's periodic refresh check (``authenticationRefreshCheckSeconds``)."""
        auth = self._auth
        assert auth is not None
        interval = self._service.security.config.refresh_check_s
        while self._open:
            await asyncio.sleep(interval)
            if self._features is None:
                continue
            action = auth.refresh_step(
                time.time(), supports_refresh=self._features.supports_auth_refresh
            )
            if action is RefreshAction.CLOSE:
                log.info("authentication_expired", client=self._address, role=self._role())
                self.close()
                self._reader.feed_eof()
                return
            if action is RefreshAction.CHALLENGE:
                log.info("authentication_challenge", client=self._address, role=self._role())
                self.write_command(
                    commands.auth_challenge(
                        server_version=SERVER_VERSION,
                        protocol_version=self._features.protocol_version,
                        method=auth.challenge_method(),
                        data=REFRESH_AUTH_DATA,
                    )
                )

    def _role(self) -> str | None:
        return None if self._caller is None else self._caller.role

    def _auth_response(self, response: pb.CommandAuthResponse) -> None:
        if self._auth is None:
            self.write_command(
                commands.error(
                    commands.BROKER_REQUEST_ID, pb.NotAllowedError, "authentication is not enabled"
                )
            )
            return
        method = response.response.auth_method_name
        try:
            self._auth.auth_response(response, self.peer_certificate)
        except AuthenticationFailed as exc:
            self._service.security.count_refused(method, exc)
            self._refuse_authentication(exc, method)
            return
        self._service.security.count_accepted(method or "none")
        log.info("authentication_refreshed", client=self._address, role=self._role())

    async def _partitioned_metadata(self, request: pb.CommandPartitionedTopicMetadata) -> None:
        async def work() -> pb.BaseCommand:
            topic = TopicName.parse(request.topic)
            caller = self._request_caller(request.original_principal)
            await self._service.security.check_topic(caller, topic, LOOKUP)
            if request.metadata_auto_creation_enabled:
                partitions = await self._service.admin.partitions_auto_created(topic)
            else:
                partitions = await self._service.partitions(topic)
            return commands.partitioned_metadata_response(request.request_id, partitions)

        await self.request(request.request_id, work, commands.partitioned_metadata_failed)

    async def _lookup(self, request: pb.CommandLookupTopic) -> None:
        # Errors travel inside LOOKUP_RESPONSE: the C++ client ignores ERROR for a lookup.
        async def work() -> pb.BaseCommand:
            try:
                topic = TopicName.parse(request.topic)
            except InvalidTopicName as exc:
                return commands.lookup_failed(request.request_id, pb.InvalidTopicName, str(exc))
            caller = self._request_caller(request.original_principal)
            await self._service.security.check_topic(caller, topic, LOOKUP)
            found = await self._service.lookup(topic, request.authoritative)
            found = found.for_listener(request.advertised_listener_name)
            return commands.lookup_response(
                request.request_id,
                broker_service_url=found.pulsar_service_url,
                broker_service_url_tls=found.pulsar_service_url_tls or None,
                redirect=found.redirect,
                authoritative=found.authoritative,
                proxy_through_service_url=found.proxy_through_service_url,
            )

        await self.request(request.request_id, work, commands.lookup_failed)
