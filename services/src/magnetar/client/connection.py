"""One TCP connection to a broker: handshake, request/response by request id, keep-alive, dispatch.

:meth:`Connection.open` connects, sends CONNECT and waits for CONNECTED (under the connection
timeout); the negotiated ``protocol_version`` is the broker's answer (it picks the lower of its
maximum and ours). Then two tasks run until the connection closes:

* the reader task feeds received bytes to a :class:`~magnetar.protocol.frame.FrameDecoder` and
  dispatches each frame: responses complete the future registered under their ``request_id``;
  SEND_RECEIPT / SEND_ERROR / CLOSE_PRODUCER go to the :class:`ProducerHandler` registered
  for their producer id; MESSAGE / ACTIVE_CONSUMER_CHANGE / REACHED_END_OF_TOPIC /
  CLOSE_CONSUMER to the :class:`ConsumerHandler` of their consumer id; PING is answered with PONG.
* the keep-alive task sends PING every ``keepalive_interval_s``; if nothing at all arrived
  during a whole interval after a PING, the broker is gone and the connection is closed.

When the connection ends (EOF, error, keep-alive failure or :meth:`close`) every outstanding
request fails with :class:`~magnetar.client.errors.ConnectionLost` and every registered handler
gets ``on_connection_lost`` exactly once; registrations are then dropped, so handlers
re-register on whatever connection they reattach to.

Concurrency: everything runs on one event loop. Handler callbacks are plain (non-async)
methods called from the reader task; they must not block. Writes are synchronous and
coalesced: frames written during one event-loop iteration are queued in order and handed to
the transport together at the end of it (one ``send`` syscall instead of one per frame; a
pipelining producer writes hundreds of frames per iteration). :meth:`drain` and shutdown hand
over the queue first; callers that produce a lot await :meth:`drain` for backpressure.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import ssl
import time
from collections.abc import Callable
from typing import Protocol

from magnetar.cancellation import cancel_and_wait
from magnetar.chunk_reader import open_connection
from magnetar.client.errors import (
    ConnectionFailed,
    ConnectionLost,
    OperationTimeout,
    TlsVerificationFailed,
    server_error,
)
from magnetar.client.settings import Authentication, TlsOptions
from magnetar.protocol import commands
from magnetar.protocol.errors import ProtocolError
from magnetar.protocol.frame import (
    DEFAULT_MAX_MESSAGE_SIZE,
    FRAME_SIZE_PADDING,
    Frame,
    FrameDecoder,
    MessageFrame,
    PayloadSection,
    command_body,
    encode_command,
)
from magnetar.protocol.hand_decoded import Delivery, ReceiptFrame, delivery_of
from magnetar.protocol.hand_encoded import send_frame
from magnetar.protocol.message_id import to_signed64
from magnetar.protocol.version import MAX_PROTOCOL_VERSION, V_CHECKSUM
from magnetar.telemetry import get_logger
from magnetar.wire import pulsar_api_pb2 as pb

log = get_logger(__name__)

T = pb.BaseCommand
CLIENT_VERSION = "magnetar-client-0.1"
_READ_CHUNK = 256 * 1024
# The client accepts frames of any reasonable size (the C++ client grows its buffer).
_MAX_RECEIVE_FRAME = 128 * 1024 * 1024

# Responses matched to a request by the request_id inside their body.
_RESPONSES = frozenset(
    {
        T.SUCCESS,
        T.ERROR,
        T.PRODUCER_SUCCESS,
        T.LOOKUP_RESPONSE,
        T.PARTITIONED_METADATA_RESPONSE,
        T.GET_LAST_MESSAGE_ID_RESPONSE,
        T.GET_TOPICS_OF_NAMESPACE_RESPONSE,
        T.GET_SCHEMA_RESPONSE,
        T.GET_OR_CREATE_SCHEMA_RESPONSE,
        T.CONSUMER_STATS_RESPONSE,
        T.ACK_RESPONSE,
    }
)


class ProducerHandler(Protocol):
    def on_send_receipt(self, sequence_id: int, ledger_id: int, entry_id: int) -> None:
        """The broker stored the SEND of ``sequence_id`` at (ledger_id, entry_id)."""

    def on_send_error(self, error: pb.CommandSendError) -> None: ...

    def on_broker_close(self) -> None: ...

    def on_connection_lost(self, error: BaseException) -> None: ...


class ConsumerHandler(Protocol):
    def on_message(
        self, delivery: Delivery, metadata: pb.MessageMetadata, payload: bytes
    ) -> None: ...

    def on_active_consumer_change(self, is_active: bool) -> None: ...

    def on_reached_end_of_topic(self) -> None: ...

    def on_broker_close(self) -> None: ...

    def on_connection_lost(self, error: BaseException) -> None: ...


def response_error(command: pb.BaseCommand) -> Exception | None:
    """The error a response carries (ERROR, failed lookups, error codes), or None."""
    t = command.type
    if t == T.ERROR:
        return server_error(command.error.error, command.error.message)
    if t == T.LOOKUP_RESPONSE:
        body = command.lookup_topic_response
        if body.response == pb.CommandLookupTopicResponse.Failed:
            return server_error(body.error, body.message)
    elif t == T.PARTITIONED_METADATA_RESPONSE:
        pm = command.partition_metadata_response
        if pm.response == pb.CommandPartitionedTopicMetadataResponse.Failed:
            return server_error(pm.error, pm.message)
    elif t == T.GET_SCHEMA_RESPONSE:
        gs = command.get_schema_response
        if gs.HasField("error_code"):
            return server_error(gs.error_code, gs.error_message)
    elif t == T.GET_OR_CREATE_SCHEMA_RESPONSE:
        gc = command.get_or_create_schema_response
        if gc.HasField("error_code"):
            return server_error(gc.error_code, gc.error_message)
    elif t == T.CONSUMER_STATS_RESPONSE:
        cs = command.consumer_stats_response
        if cs.HasField("error_code"):
            return server_error(cs.error_code, cs.error_message)
    elif t == T.ACK_RESPONSE:
        ar = command.ack_response
        if ar.HasField("error"):
            return server_error(ar.error, ar.message)
    return None


class Connection:
    """A connected, handshaken broker connection. Build with :meth:`open`."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        logical_address: str,
        physical_address: str,
        operation_timeout_s: float,
        keepalive_interval_s: float,
    ) -> None:
        self.logical_address = logical_address
        self.physical_address = physical_address
        self.server_version = ""
        self.protocol_version = 0
        self.max_message_size = DEFAULT_MAX_MESSAGE_SIZE
        self.operation_timeout_s = operation_timeout_s
        self._keepalive_interval_s = keepalive_interval_s
        self._reader = reader
        self._writer = writer
        self._decoder = FrameDecoder(max_frame_size=_MAX_RECEIVE_FRAME)
        self._request_ids = itertools.count()
        self._pending: dict[int, asyncio.Future[pb.BaseCommand]] = {}
        self._producers: dict[int, ProducerHandler] = {}
        self._consumers: dict[int, ConsumerHandler] = {}
        self._auth: Authentication | None = None
        self._closed = False
        self._close_error: BaseException | None = None
        self._last_received = time.monotonic()
        self._reader_task: asyncio.Task[None] | None = None
        self._keepalive_task: asyncio.Task[None] | None = None
        self._closed_event = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        # Frames written this loop iteration, in order; bounded by what callers write per
        # iteration (producers by their pending limit). Empty whenever no flush is scheduled.
        self._out: list[bytes] = []

    # ------------------------------------------------------------------ opening

    @classmethod
    async def open(
        cls,
        logical_address: str,
        physical_address: str | None = None,
        *,
        connection_timeout_s: float = 10.0,
        operation_timeout_s: float = 30.0,
        keepalive_interval_s: float = 30.0,
        auth: Authentication | None = None,
        tls: TlsOptions | None = None,
        proxy_to_broker_url: str | None = None,
        client_version: str = CLIENT_VERSION,
    ) -> Connection:
        """Connect to ``physical_address`` (default: the logical one) and complete CONNECT."""
        physical = physical_address or logical_address
        host, _, port = physical.rpartition(":")
        try:
            async with asyncio.timeout(connection_timeout_s):
                reader, writer = await open_connection(  # (reads without copies)
                    host,
                    int(port),
                    ssl=tls.ssl_context() if tls is not None else None,
                    limit=_READ_CHUNK,
                )
        except TimeoutError as exc:
            raise ConnectionFailed(f"connecting to {physical} timed out") from exc
        except ssl.SSLCertVerificationError as exc:
            raise TlsVerificationFailed(
                f"the TLS certificate of {physical} is refused: {exc.verify_message}; check the "
                "trust certificates file (and hostname validation) the client is given"
            ) from exc
        except OSError as exc:
            raise ConnectionFailed(f"cannot connect to {physical}: {exc}") from exc
        conn = cls(
            reader,
            writer,
            logical_address=logical_address,
            physical_address=physical,
            operation_timeout_s=operation_timeout_s,
            keepalive_interval_s=keepalive_interval_s,
        )
        conn._auth = auth
        try:
            async with asyncio.timeout(connection_timeout_s):
                await conn._handshake(client_version, proxy_to_broker_url)
        except BaseException as exc:
            writer.close()
            if isinstance(exc, TimeoutError):
                raise ConnectionFailed(f"CONNECT to {physical} timed out") from exc
            if isinstance(exc, (OSError, ProtocolError)):
                raise ConnectionFailed(f"CONNECT to {physical} failed: {exc}") from exc
            raise
        conn._reader_task = asyncio.create_task(conn._read_loop(), name=f"conn-read-{physical}")
        if keepalive_interval_s > 0:
            conn._keepalive_task = asyncio.create_task(
                conn._keepalive_loop(), name=f"conn-keepalive-{physical}"
            )
        log.debug(
            "client_connection_open",
            address=physical,
            logical=logical_address,
            server_version=conn.server_version,
            protocol_version=conn.protocol_version,
        )
        return conn

    async def _handshake(self, client_version: str, proxy_to_broker_url: str | None) -> None:
        auth = self._auth
        self._write(
            encode_command(
                commands.connect(
                    client_version=client_version,
                    protocol_version=MAX_PROTOCOL_VERSION,
                    auth_method_name=auth.method_name if auth is not None else None,
                    auth_data=auth.auth_data() if auth is not None else None,
                    proxy_to_broker_url=proxy_to_broker_url,
                )
            )
        )
        while True:
            data = await self._reader.read(_READ_CHUNK)
            if not data:
                raise ConnectionFailed(f"{self.physical_address} closed during CONNECT")
            self._decoder.feed(data)
            for frame in self._decoder.frames():
                command = frame.command
                if command.type == T.CONNECTED:
                    self._on_connected(command.connected)
                    return
                if command.type == T.AUTH_CHALLENGE:
                    self._answer_auth_challenge()
                    continue
                if command.type == T.ERROR:
                    raise server_error(command.error.error, command.error.message)
                raise ConnectionFailed(
                    f"expected CONNECTED from {self.physical_address}, got "
                    f"{T.Type.Name(command.type)}"
                )

    def _on_connected(self, connected: pb.CommandConnected) -> None:
        self.server_version = connected.server_version
        self.protocol_version = connected.protocol_version
        if connected.HasField("max_message_size") and connected.max_message_size > 0:
            self.max_message_size = connected.max_message_size
            self._decoder.max_frame_size = max(
                _MAX_RECEIVE_FRAME, self.max_message_size + FRAME_SIZE_PADDING
            )

    def _answer_auth_challenge(self) -> None:
        auth = self._auth
        body = pb.CommandAuthResponse(
            client_version=CLIENT_VERSION, protocol_version=MAX_PROTOCOL_VERSION
        )
        if auth is not None:
            body.response.auth_method_name = auth.method_name
            body.response.auth_data = auth.auth_data()
        command = pb.BaseCommand(type=T.AUTH_RESPONSE)
        command.auth_response.CopyFrom(body)
        self._write(encode_command(command))

    # ------------------------------------------------------------------ public surface

    @property
    def is_open(self) -> bool:
        return not self._closed

    @property
    def checksum(self) -> bool:
        """Whether SEND carries a CRC32-C (the broker speaks protocol v6 or later)."""
        return self.protocol_version >= V_CHECKSUM

    def new_request_id(self) -> int:
        return next(self._request_ids)

    async def request(
        self, command: pb.BaseCommand, *, timeout_s: float | None = None
    ) -> pb.BaseCommand:
        """Send ``command`` (which carries a request id) and await its response."""
        request_id: int = command_body(command).request_id  # type: ignore[attr-defined]
        self._check_open()
        future: asyncio.Future[pb.BaseCommand] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        try:
            self._write(encode_command(command))
            timeout = self.operation_timeout_s if timeout_s is None else timeout_s
            try:
                async with asyncio.timeout(timeout):
                    return await asyncio.shield(future)
            except TimeoutError as exc:
                name = T.Type.Name(command.type)
                raise OperationTimeout(
                    f"{name} (request {request_id}) to {self.physical_address} got no answer "
                    f"within {timeout:.1f}s"
                ) from exc
        finally:
            self._pending.pop(request_id, None)
            if not future.done():
                future.cancel()

    def send_command(self, command: pb.BaseCommand) -> None:
        """Fire and forget (FLOW, ACK, REDELIVER, CLOSE_* without waiting ...)."""
        self._check_open()
        self._write(encode_command(command))

    def send_message(
        self,
        producer_id: int,
        sequence_id: int,
        num_messages: int,
        highest_sequence_id: int,
        metadata: bytes,
        payload: bytes,
    ) -> None:
        """A SEND frame (:func:`~magnetar.protocol.hand_encoded.send_frame`: ``num_messages``
        and ``highest_sequence_id`` written when not negative) of the serialized ``metadata``;
        with a CRC32-C when the broker speaks protocol v6 or later."""
        self._check_open()
        self._write(
            send_frame(
                producer_id,
                sequence_id,
                num_messages,
                highest_sequence_id,
                metadata,
                payload,
                self.checksum,
            )
        )

    async def drain(self) -> None:
        """Wait until the transport's write buffer is below its high-water mark."""
        self._check_open()
        self._flush_writes()
        try:
            await self._writer.drain()
        except (ConnectionError, OSError) as exc:
            raise ConnectionLost(f"connection to {self.physical_address} lost: {exc}") from exc

    def register_producer(self, producer_id: int, handler: ProducerHandler) -> None:
        self._check_open()
        self._producers[producer_id] = handler

    def unregister_producer(self, producer_id: int) -> None:
        self._producers.pop(producer_id, None)

    def register_consumer(self, consumer_id: int, handler: ConsumerHandler) -> None:
        self._check_open()
        self._consumers[consumer_id] = handler

    def unregister_consumer(self, consumer_id: int) -> None:
        self._consumers.pop(consumer_id, None)

    async def close(self) -> None:
        """Close the socket, fail outstanding requests, notify handlers; idempotent."""
        self._shutdown(ConnectionLost(f"connection to {self.physical_address} closed"))
        await cancel_and_wait(self._keepalive_task)
        await cancel_and_wait(self._reader_task)
        with contextlib.suppress(TimeoutError, ConnectionError, OSError):
            await asyncio.wait_for(self._writer.wait_closed(), 1.0)

    async def wait_closed(self) -> None:
        await self._closed_event.wait()

    # ------------------------------------------------------------------ internals

    def _check_open(self) -> None:
        if self._closed:
            raise ConnectionLost(
                f"connection to {self.physical_address} is closed: {self._close_error}"
            )

    def _write(self, data: bytes) -> None:
        out = self._out
        out.append(data)
        if len(out) == 1:
            self._loop.call_soon(self._flush_writes)

    def _flush_writes(self) -> None:
        """Hand every queued frame to the transport, in order (one write)."""
        out = self._out
        if not out:
            return
        self._out = []
        self._writer.write(out[0] if len(out) == 1 else b"".join(out))

    def _shutdown(self, error: BaseException) -> None:
        if self._closed:
            return
        self._closed = True
        self._close_error = error
        with contextlib.suppress(ConnectionError, OSError, RuntimeError):
            self._flush_writes()  # what was written before close still goes, as before
        self._writer.close()
        lost = error if isinstance(error, ConnectionLost) else ConnectionLost(str(error))
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(lost)
        producers, self._producers = self._producers, {}
        consumers, self._consumers = self._consumers, {}
        handlers: list[ProducerHandler | ConsumerHandler] = [*producers.values()]
        handlers += consumers.values()
        for handler in handlers:
            try:
                handler.on_connection_lost(lost)
            except Exception as exc:
                log.warning("client_handler_error", event_name="connection_lost", error=repr(exc))
        self._closed_event.set()
        log.debug("client_connection_closed", address=self.physical_address, error=str(error))

    async def _read_loop(self) -> None:
        error: BaseException = ConnectionLost(f"{self.physical_address} closed the connection")
        try:
            while True:
                data = await self._reader.read(_READ_CHUNK)
                if not data:
                    break
                self._last_received = time.monotonic()
                self._decoder.feed(data)
                while True:
                    try:
                        for frame in self._decoder.client_frames():
                            if isinstance(frame, ReceiptFrame):
                                self._on_receipt(frame)
                            elif isinstance(frame, MessageFrame):
                                self._on_delivery(frame.delivery, frame.section)
                            else:
                                self._dispatch(frame)
                        break
                    except ProtocolError as exc:
                        if exc.fatal:
                            raise
                        log.warning(
                            "client_bad_frame", address=self.physical_address, error=str(exc)
                        )
        except asyncio.CancelledError:
            error = ConnectionLost(f"connection to {self.physical_address} closed")
            raise
        except (ConnectionError, OSError, ProtocolError) as exc:
            error = ConnectionLost(f"connection to {self.physical_address} failed: {exc}")
        finally:
            self._shutdown(error)

    async def _keepalive_loop(self) -> None:
        interval = self._keepalive_interval_s
        while not self._closed:
            sent_at = time.monotonic()
            try:
                self._write(encode_command(commands.ping()))
            except (ConnectionError, OSError, RuntimeError):
                break
            await asyncio.sleep(interval)
            if self._last_received < sent_at:
                log.warning(
                    "client_keepalive_timeout", address=self.physical_address, interval_s=interval
                )
                self._shutdown(
                    ConnectionLost(f"{self.physical_address} did not answer PING in {interval}s")
                )
                return

    def _on_receipt(self, receipt: ReceiptFrame) -> None:
        """A SEND_RECEIPT as scanned: one arrives for every SEND."""
        producer_id, sequence_id, ledger_id, entry_id = receipt
        producer = self._producers.get(producer_id)
        if producer is None:
            return
        try:
            producer.on_send_receipt(sequence_id, ledger_id, entry_id)
        except Exception as exc:
            log.warning("client_handler_error", callback="on_send_receipt", error=repr(exc))

    def _on_delivery(self, delivery: Delivery, section: PayloadSection) -> None:
        """A MESSAGE: one arrives for every entry delivered."""
        consumer = self._consumers.get(delivery.consumer_id)
        if consumer is None:
            return
        try:
            consumer.on_message(delivery, section.metadata, section.payload)
        except Exception as exc:
            log.warning("client_handler_error", callback="on_message", error=repr(exc))

    def _dispatch(self, frame: Frame) -> None:
        command = frame.command
        t = command.type
        if t in _RESPONSES:
            self._complete(command)
        elif t == T.SEND_RECEIPT:  # one the scan did not take: protobuf read it
            receipt = command.send_receipt
            self._on_receipt(
                ReceiptFrame(
                    receipt.producer_id,
                    receipt.sequence_id,
                    to_signed64(receipt.message_id.ledger_id),
                    to_signed64(receipt.message_id.entry_id),
                )
            )
        elif t == T.SEND_ERROR:
            producer = self._producers.get(command.send_error.producer_id)
            if producer is not None:
                self._call(producer.on_send_error, command.send_error)
        elif t == T.CLOSE_PRODUCER:
            producer = self._producers.pop(command.close_producer.producer_id, None)
            if producer is not None:
                self._call(producer.on_broker_close)
        elif t == T.MESSAGE and frame.payload is not None:  # one the scan did not take
            self._on_delivery(delivery_of(command.message), frame.payload)
        elif t == T.ACTIVE_CONSUMER_CHANGE:
            change = command.active_consumer_change
            consumer = self._consumers.get(change.consumer_id)
            if consumer is not None:
                self._call(consumer.on_active_consumer_change, change.is_active)
        elif t == T.REACHED_END_OF_TOPIC:
            consumer = self._consumers.get(command.reached_end_of_topic.consumer_id)
            if consumer is not None:
                self._call(consumer.on_reached_end_of_topic)
        elif t == T.CLOSE_CONSUMER:
            consumer = self._consumers.pop(command.close_consumer.consumer_id, None)
            if consumer is not None:
                self._call(consumer.on_broker_close)
        elif t == T.TOPIC_MIGRATED:
            self._on_topic_migrated(command.topic_migrated)
        elif t == T.PING:
            self._write(encode_command(commands.pong()))
        elif t == T.AUTH_CHALLENGE:
            self._answer_auth_challenge()
        elif t != T.PONG:
            log.debug("client_unexpected_command", command=T.Type.Name(t))

    def _on_topic_migrated(self, migrated: pb.CommandTopicMigrated) -> None:
        if migrated.resource_type == pb.CommandTopicMigrated.Producer:
            producer = self._producers.pop(migrated.resource_id, None)
            if producer is not None:
                self._call(producer.on_broker_close)
        else:
            consumer = self._consumers.pop(migrated.resource_id, None)
            if consumer is not None:
                self._call(consumer.on_broker_close)

    def _complete(self, command: pb.BaseCommand) -> None:
        request_id = command_body(command).request_id  # type: ignore[attr-defined]
        if command.type == T.PRODUCER_SUCCESS and not command.producer_success.producer_ready:
            return  # WaitForExclusive: a second PRODUCER_SUCCESS follows when ready
        future = self._pending.get(request_id)
        if future is None or future.done():
            return
        error = response_error(command)
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(command)

    @staticmethod
    def _call(callback: Callable[..., None], *args: object) -> None:
        try:
            callback(*args)
        except Exception as exc:
            log.warning("client_handler_error", callback=repr(callback), error=repr(exc))
