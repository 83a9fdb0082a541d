"""A scripted loopback Pulsar broker for the client's unit tests (holds no tests).

:class:`FakeBroker` speaks just enough of the binary protocol through the real codec
(FrameDecoder, command constructors) for a test to script each answer: CONNECT and PING are
answered here, every other frame goes to the test's ``handler(broker, frame)``. It runs on the
test's event loop; ``async with`` starts it on a free loopback port and closes every connection
on exit. :func:`lookup_here` answers LOOKUP and PARTITIONED_METADATA with "this broker".
Used by ``test_connection.py`` and ``test_producer.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from magnetar.protocol import commands
from magnetar.protocol.envelope import wrap
from magnetar.protocol.frame import Frame, FrameDecoder, encode_command
from magnetar.wire import pulsar_api_pb2 as pb

T = pb.BaseCommand

Handler = Callable[["FakeBroker", Frame], None]


class FakeBroker:
    """A loopback server; ``handler(broker, frame)`` answers each frame after CONNECT."""

    def __init__(self, handler: Handler | None = None, *, max_message_size: int = 5 << 20) -> None:
        self.handler = handler or (lambda broker, frame: None)
        self.max_message_size = max_message_size
        self.frames: list[Frame] = []
        self.writers: list[asyncio.StreamWriter] = []
        self.writer: asyncio.StreamWriter | None = None
        self.answer_ping = True
        self.connect_error: pb.ServerError.ValueType | None = None
        self.connects = 0
        self.pings = 0
        self.changed = asyncio.Event()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> FakeBroker:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for writer in self.writers:
            writer.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    @property
    def address(self) -> str:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return f"127.0.0.1:{port}"

    def send(self, command: pb.BaseCommand) -> None:
        assert self.writer is not None
        self.writer.write(encode_command(command))

    async def wait_until(self, predicate: Callable[[], bool], timeout_s: float = 5.0) -> None:
        """Wait (bounded) until ``predicate()`` holds; re-checked after every received frame."""
        async with asyncio.timeout(timeout_s):
            while not predicate():
                self.changed.clear()
                await self.changed.wait()

    def drop(self) -> None:
        """Close every client connection (a broker crash as the client sees it)."""
        for writer in self.writers:
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self.writers.append(writer)
        self.writer = writer
        decoder = FrameDecoder()
        try:
            while data := await reader.read(65536):
                decoder.feed(data)
                for frame in decoder.frames():
                    self._on_frame(frame, writer)
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()
            self._tasks.discard(task)

    def _on_frame(self, frame: Frame, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        t = frame.command.type
        if t == T.CONNECT:
            self.connects += 1
            if self.connect_error is not None:
                body = pb.CommandError(request_id=0, error=self.connect_error, message="no")
                writer.write(encode_command(wrap(T.ERROR, body)))
                return
            connected = pb.CommandConnected(
                server_version="fake-1",
                protocol_version=min(frame.command.connect.protocol_version, 19),
                max_message_size=self.max_message_size,
            )
            writer.write(encode_command(wrap(T.CONNECTED, connected)))
            return
        if t == T.PING:
            self.pings += 1
            if self.answer_ping:
                writer.write(encode_command(commands.pong()))
            return
        self.frames.append(frame)
        self.handler(self, frame)
        self.changed.set()


def lookup_here(broker: FakeBroker, frame: Frame) -> bool:
    """Answer LOOKUP with Connect to this broker; True if the frame was a LOOKUP."""
    command = frame.command
    if command.type == T.LOOKUP:
        body = pb.CommandLookupTopicResponse(
            request_id=command.lookup_topic.request_id,
            response=pb.CommandLookupTopicResponse.Connect,
            broker_service_url=f"pulsar://{broker.address}",
            authoritative=True,
        )
        broker.send(wrap(T.LOOKUP_RESPONSE, body))
        return True
    if command.type == T.PARTITIONED_METADATA:
        body2 = pb.CommandPartitionedTopicMetadataResponse(
            request_id=command.partition_metadata.request_id,
            partitions=0,
            response=pb.CommandPartitionedTopicMetadataResponse.Success,
        )
        broker.send(wrap(T.PARTITIONED_METADATA_RESPONSE, body2))
        return True
    return False
