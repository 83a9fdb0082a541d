"""A Pulsar-protocol sink: acknowledges every SEND at once and stores nothing, so that a load
generator run against it measures the generator's own ceiling (issue 17: "a load generator that
is never the limit").

Usage::

    python -m tests.bench.pulsar_sink [--port 0] [--event-loop uvloop|asyncio]

It prints ``pulsar sink ready on pulsar://127.0.0.1:PORT`` when it listens, and stops on
SIGTERM or SIGINT. What it answers (with :mod:`magnetar.protocol`'s codec), enough for the
official client's and Magnetar's producers:

- CONNECT -> CONNECTED (the protocol version negotiated as the broker does);
- PARTITIONED_METADATA -> 0 partitions; LOOKUP -> "connect here" (this sink's own URL);
- PRODUCER -> PRODUCER_SUCCESS; SEND -> SEND_RECEIPT at once (ledger 1, one entry id per SEND
  on the connection, the batch's highest sequence id when it carries one);
- SUBSCRIBE, CLOSE_PRODUCER, CLOSE_CONSUMER -> SUCCESS (a consumer may attach but receives
  nothing: benchmarks run against the sink without one); PING -> PONG;
- FLOW, ACK, PONG and anything else: ignored (each other command type named once on stderr).

One asyncio ``Protocol`` per connection, on uvloop by default (the event loop is the sink's
whole cost; :mod:`magnetar.cli.event_loop` is the one adapter uvloop enters through). The
answers to everything one socket read carried leave in one write. Checksums are not verified:
a sink that spent CPU on them would measure itself, not the generator. Not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from magnetar.cli.event_loop import loop_factory
from magnetar.protocol import DEFAULT_MAX_MESSAGE_SIZE, FrameDecoder, ProtocolError, commands
from magnetar.protocol.frame import encode_command
from magnetar.protocol.hand_encoded import send_receipt_frame
from magnetar.protocol.version import negotiate_protocol_version
from magnetar.wire import pulsar_api_pb2 as pb
from tests.kit.ports import free_port
from tests.kit.process import ServerProcess

READY_LINE = "pulsar sink ready on"
SERVER_VERSION = "magnetar-bench-sink"
T = pb.BaseCommand
_LEDGER_ID = 1
_REPO = Path(__file__).resolve().parents[2]


class SinkConnection(asyncio.Protocol):
    """One client connection: frames in, answers out, nothing kept."""

    def __init__(self, service_url: str, ignored: set[int]) -> None:
        self.service_url = service_url
        self.ignored = ignored  # command types already reported as ignored (all connections)
        self.decoder = FrameDecoder(verify_checksum=False)
        self.transport: asyncio.WriteTransport | None = None
        self.entry_id = 0
        self.producers = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment] # a stream transport

    def data_received(self, data: bytes) -> None:
        assert self.transport is not None
        answers: list[bytes] = []
        try:
            self.decoder.feed(data)
            for frame in self.decoder.frames():
                answer = self.answer(frame.command)
                if answer:
                    answers.append(answer)
        except ProtocolError as exc:
            print(f"pulsar sink: closing a connection: {exc}", file=sys.stderr, flush=True)
            self.transport.close()
            return
        finally:
            if answers:
                self.transport.write(b"".join(answers))

    def answer(self, command: pb.BaseCommand) -> bytes:
        """The frame(s) answering ``command``; empty when it needs none."""
        kind = command.type
        if kind == T.SEND:
            send = command.send
            self.entry_id += 1
            highest = send.highest_sequence_id if send.HasField("highest_sequence_id") else None
            return send_receipt_frame(
                send.producer_id, send.sequence_id, _LEDGER_ID, self.entry_id, highest
            )
        if kind == T.PING:
            return encode_command(commands.pong())
        if kind == T.CONNECT:
            version = negotiate_protocol_version(command.connect.protocol_version)
            connected = commands.connected(
                server_version=SERVER_VERSION,
                protocol_version=version,
                max_message_size=DEFAULT_MAX_MESSAGE_SIZE,
            )
            return encode_command(connected)
        if kind == T.PARTITIONED_METADATA:
            request_id = command.partition_metadata.request_id
            return encode_command(commands.partitioned_metadata_response(request_id, 0))
        if kind == T.LOOKUP:
            request_id = command.lookup_topic.request_id
            lookup = commands.lookup_response(request_id, broker_service_url=self.service_url)
            return encode_command(lookup)
        if kind == T.PRODUCER:
            producer = command.producer
            self.producers += 1
            name = producer.producer_name or f"{SERVER_VERSION}-{id(self)}-{self.producers}"
            return encode_command(commands.producer_success(producer.request_id, name))
        if kind == T.SUBSCRIBE:
            return encode_command(commands.success(command.subscribe.request_id))
        if kind == T.CLOSE_PRODUCER:
            return encode_command(commands.success(command.close_producer.request_id))
        if kind == T.CLOSE_CONSUMER:
            return encode_command(commands.success(command.close_consumer.request_id))
        if kind not in self.ignored and kind not in (T.FLOW, T.ACK, T.PONG):
            self.ignored.add(kind)
            print(f"pulsar sink: ignoring {T.Type.Name(kind)}", file=sys.stderr, flush=True)
        return b""


async def serve(port: int) -> None:
    """Listen on 127.0.0.1:``port`` (0: any free port) until SIGTERM or SIGINT."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    ignored: set[int] = set()
    url: list[str] = []
    server = await loop.create_server(
        lambda: SinkConnection(url[0], ignored), "127.0.0.1", port, reuse_address=True
    )
    bound = server.sockets[0].getsockname()[1]
    url.append(f"pulsar://127.0.0.1:{bound}")
    print(f"{READY_LINE} {url[0]}", flush=True)
    async with server:
        await stop.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0: any)")
    parser.add_argument("--event-loop", choices=("uvloop", "asyncio"), default="uvloop",
                        help="the event loop to serve on")  # fmt: skip
    args = parser.parse_args(argv)
    with asyncio.Runner(loop_factory=loop_factory(args.event_loop)) as runner:
        runner.run(serve(args.port))
    return 0


@dataclass
class SinkProcess(ServerProcess):
    """The sink as a child process on a free loopback port (the kit's start, stop and log
    handling: output goes to ``<data_dir>.log``)."""

    ready_line: ClassVar[str] = READY_LINE
    redrawn_ports: ClassVar[tuple[str, ...]] = ("port",)
    stop_timeout_s: ClassVar[float] = 10.0

    data_dir: Path
    port: int = field(default_factory=free_port)
    env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None
    _log_offset: int = 0

    @property
    def service_url(self) -> str:
        return f"pulsar://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "tests.bench.pulsar_sink", "--port", str(self.port)]

    def spawn(self) -> subprocess.Popen[bytes]:
        # ``-m tests.bench...`` needs the repository on the path, wherever the caller runs.
        self.env.setdefault("PYTHONPATH", str(_REPO))
        return super().spawn()

    def describe(self) -> str:
        return f"pulsar sink {self.service_url}"


if __name__ == "__main__":
    sys.exit(main())
