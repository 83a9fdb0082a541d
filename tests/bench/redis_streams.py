"""The Redis Streams load generator of the side-by-side benchmark: the same process model and
the same spec as the Pulsar generator in ``broker_official_client`` (``load_window``), speaking
RESP to a private ``redis-server`` (``tests.kit.redis_server``).

- A **producer** process (one connection) appends 1 entry per message to one stream
  (``XADD key MAXLEN ~ N * d <payload>``), with up to ``pending`` appends in flight, paced or
  flat out. Unbatched: each XADD is written on its own as it is sent. Batched, the analogue of
  Pulsar's batching (up to 1000 messages, 128 KiB, 1 ms): XADDs are held and written together,
  pipelined, when 1000 or 128 KiB are held, or 1 ms after the first. The latency of each
  message is from its send call to its reply. One asyncio ``Protocol`` on uvloop: no future
  per message, replies parsed as they arrive.
- The **consumer** process reads the stream with ``XREAD COUNT 1000 BLOCK 200`` from the last id
  it saw (Redis keeps no cursor for it and it acknowledges nothing: the cheaper side of the
  comparison) and, when the producers stamp their payloads, records send-to-receipt latency.
- ``MAXLEN ~`` trims the stream to about 256 MiB of payload, so that a long run at full speed
  does not fill the machine's memory (Magnetar's backlog is on disk; Redis's is in memory).

:class:`RespReader` and :func:`command` are a minimal RESP2 codec (no third-party client: its
per-command Python cost would make the generator the limit). :func:`redis_benchmark` runs
``redis-benchmark`` (50 connections, XADD) for the figure the issue quotes. Not a test.
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import time
from array import array
from collections import deque
from typing import Any

from magnetar.cli.event_loop import loop_factory
from tests.bench.load_window import (
    PACER_TICK_S,
    Pacer,
    WindowCpu,
    stamp_of,
    stamped,
    wait_window,
)
from tests.kit.redis_server import redis_binary

BATCH_MAX = 1000  # XADDs held before a pipelined write (Pulsar: batching_max_messages)
BATCH_DELAY_S = 0.001  # the longest an XADD is held (Pulsar: batching_max_publish_delay_ms)
BATCH_MAX_BYTES = 128 * 1024  # payload bytes held before a write (Pulsar: batching_max_bytes)
TRIM_BYTES = 256 * 1024 * 1024  # about this much payload stays in the stream
FIELD = b"d"


class RespError(Exception):
    """An error reply (``-ERR ...``) from the server."""


class _Incomplete(Exception):
    """The buffer ends inside a reply: wait for more bytes."""


def command(*args: bytes) -> bytes:
    """One command as a RESP array of bulk strings."""
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        parts += (b"$%d\r\n" % len(arg), arg, b"\r\n")
    return b"".join(parts)


class RespReader:
    """Incremental RESP2 reply parser: :meth:`feed` bytes, then take :meth:`replies`. Bulk
    strings come back as bytes (None for nil), arrays as lists, errors as :class:`RespError`
    values (not raised: a producer counts them)."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, data: bytes) -> None:
        self._buffer = self._buffer + data if self._buffer else data

    def replies(self) -> list[Any]:
        """Every complete reply buffered so far, in order."""
        found: list[Any] = []
        buffer, pos = self._buffer, 0
        try:
            while pos < len(buffer):
                value, pos = self._parse(buffer, pos)
                found.append(value)
        except _Incomplete:
            pass
        self._buffer = buffer[pos:]
        return found

    def _parse(self, buffer: bytes, pos: int) -> tuple[Any, int]:
        end = buffer.find(b"\r\n", pos)
        if end < 0:
            raise _Incomplete
        kind = buffer[pos]
        if kind == 0x24:  # $ bulk string
            size = int(buffer[pos + 1 : end])
            if size < 0:
                return None, end + 2
            stop = end + 2 + size
            if len(buffer) < stop + 2:
                raise _Incomplete
            return buffer[end + 2 : stop], stop + 2
        if kind == 0x2A:  # * array
            count = int(buffer[pos + 1 : end])
            if count < 0:
                return None, end + 2
            items = []
            pos = end + 2
            for _ in range(count):
                item, pos = self._parse(buffer, pos)
                items.append(item)
            return items, pos
        if kind == 0x2B:  # + simple string
            return buffer[pos + 1 : end], end + 2
        if kind == 0x2D:  # - error
            return RespError(buffer[pos + 1 : end].decode(errors="replace")), end + 2
        if kind == 0x3A:  # : integer
            return int(buffer[pos + 1 : end]), end + 2
        raise ValueError(f"not a RESP reply at byte {pos}: {buffer[pos : pos + 16]!r}")


def trim_length(size: int) -> int:
    """The ``MAXLEN ~`` that keeps about :data:`TRIM_BYTES` of ``size``-byte payloads."""
    return max(1000, TRIM_BYTES // max(1, size))


def xadd_head(key: bytes, size: int) -> bytes:
    """Everything of ``XADD key MAXLEN ~ N * d <payload>`` before the payload's bytes."""
    whole = command(b"XADD", key, b"MAXLEN", b"~", b"%d" % trim_length(size), b"*", FIELD, b"")
    return whole[: -len(b"$0\r\n\r\n")] + b"$%d\r\n" % size


class Call:
    """A blocking request-reply connection (the consumer's, and set-up's)."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.reader = RespReader()

    def __call__(self, *args: bytes) -> Any:
        self.sock.sendall(command(*args))
        while True:
            replies = self.reader.replies()
            if replies:
                reply = replies[0]
                if isinstance(reply, RespError):
                    raise reply
                return reply
            data = self.sock.recv(1 << 20)
            if not data:
                raise ConnectionError("redis-server closed the connection")
            self.reader.feed(data)

    def close(self) -> None:
        self.sock.close()


# ---------------------------------------------------------------------- producer


class _Appender(asyncio.Protocol):
    """One producer's connection: XADDs out (each on its own, or held into pipelined
    batches), replies in; the send time of every XADD in flight, oldest first."""

    def __init__(self, pending: int, batched: bool) -> None:
        self.pending = pending
        self.batched = batched
        self.reader = RespReader()
        self.sent: deque[float] = deque()
        self.held: list[bytes] = []
        self.held_bytes = 0
        self.timer: asyncio.TimerHandle | None = None
        self.room = asyncio.Event()
        self.done_at = array("d")
        self.latency = array("d")
        self.errors = 0
        self.error: BaseException | None = None
        self.transport: asyncio.WriteTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment] # a stream transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.error = exc or ConnectionError("redis-server closed the connection")
        self.room.set()

    def data_received(self, data: bytes) -> None:
        now = time.monotonic()
        self.reader.feed(data)
        sent, done_at, latency = self.sent, self.done_at, self.latency
        for reply in self.reader.replies():
            at = sent.popleft()
            if isinstance(reply, RespError):
                self.errors += 1
                continue
            done_at.append(now)
            latency.append(now - at)
        if len(sent) < self.pending:
            self.room.set()

    def send(self, frame: bytes, at: float) -> None:
        assert self.transport is not None
        self.sent.append(at)
        if not self.batched:
            self.transport.write(frame)
            return
        self.held.append(frame)
        self.held_bytes += len(frame)
        if len(self.held) >= BATCH_MAX or self.held_bytes >= BATCH_MAX_BYTES:
            self.flush()
        elif self.timer is None:
            self.timer = asyncio.get_running_loop().call_later(BATCH_DELAY_S, self.flush)

    def flush(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.held and self.transport is not None:
            self.transport.write(b"".join(self.held))
            self.held.clear()
            self.held_bytes = 0


def producer_main(spec: dict[str, Any], ready: Any, window: Any, out: Any) -> None:
    """One connection, paced at ``spec['rate']`` (0: flat out) until the window's end."""
    with asyncio.Runner(loop_factory=loop_factory("uvloop")) as runner:
        runner.run(_produce(spec, ready, window, out))


async def _produce(spec: dict[str, Any], ready: Any, window: Any, out: Any) -> None:
    loop = asyncio.get_running_loop()
    _, conn = await loop.create_connection(
        lambda: _Appender(spec["pending"], spec["batched"]), "127.0.0.1", spec["port"]
    )
    key = spec["key"].encode()
    head = xadd_head(key, spec["size"])
    payload = os.urandom(spec["size"])
    frame = head + payload + b"\r\n"
    stamp = spec.get("stamp", False)
    clock = time.monotonic
    ready.set()
    start, end = await asyncio.to_thread(wait_window, window)
    pacer = Pacer(spec["rate"], clock())
    cpu_start = -1.0
    sends = 0
    while (now := clock()) < end:
        if cpu_start < 0 and now >= start:
            cpu_start = time.process_time()
        if conn.error is not None:
            raise conn.error
        if len(conn.sent) >= conn.pending:
            conn.flush()
            conn.room.clear()
            await conn.room.wait()
            continue
        if pacer.ahead(now):
            await asyncio.sleep(PACER_TICK_S)
            continue
        sent = clock()
        conn.send(head + stamped(payload, sent) + b"\r\n" if stamp else frame, sent)
        sends += 1
        if not sends & 63:  # let replies in even when the window never fills
            await asyncio.sleep(0)
    cpu = time.process_time() - cpu_start
    conn.flush()
    deadline = clock() + 60
    while conn.sent and conn.error is None and clock() < deadline:
        conn.room.clear()
        await asyncio.wait_for(conn.room.wait(), timeout=max(0.01, deadline - clock()))
    kept = array("d", (lat for at, lat in zip(conn.done_at, conn.latency, strict=True)
                       if start <= at < end))  # fmt: skip
    out.put(("producer", len(kept), conn.errors, kept.tobytes(), cpu))
    assert conn.transport is not None
    conn.transport.close()


# ---------------------------------------------------------------------- consumer


def consumer_main(spec: dict[str, Any], ready: Any, window: Any, out: Any) -> None:
    """Reads the stream from its start with XREAD BLOCK until half a second after the window."""
    call = Call(spec["port"])
    key = spec["key"].encode()
    stamp = spec.get("stamp", False)
    last = b"0-0"
    consumed = 0
    e2e = array("d")
    ready.set()
    start, end = wait_window(window)
    cpu = WindowCpu(start, end)
    while (now := time.monotonic()) < end + 0.5:
        cpu.tick(now)
        reply = call(b"XREAD", b"COUNT", b"1000", b"BLOCK", b"200", b"STREAMS", key, last)
        if not reply:
            continue
        received = time.monotonic()
        entries = reply[0][1]
        last = entries[-1][0]
        if start <= received < end:
            consumed += len(entries)
            if stamp:
                e2e.extend(received - stamp_of(fields[1]) for _, fields in entries)
    out.put(("consumer", consumed, 0, e2e.tobytes(), cpu.seconds))
    call.close()


# ---------------------------------------------------------------------- redis-benchmark

_CSV_ROW = re.compile(rb'^"[^"]*","([0-9.]+)"', re.MULTILINE)


def redis_benchmark(
    port: int, *, size: int, requests: int, pipeline: int = 1, connections: int = 50
) -> float:
    """``redis-benchmark`` appending ``requests`` entries of ``size`` bytes with XADD over
    ``connections`` connections (``pipeline`` commands in flight on each): requests/s."""
    binary = redis_binary("redis-benchmark")
    if binary is None:
        raise RuntimeError("redis-benchmark is not installed: run `make bench-setup`")
    argv = [binary, "-h", "127.0.0.1", "-p", str(port), "-c", str(connections),
            "-n", str(requests), "-P", str(pipeline), "--csv",
            "XADD", "redis-benchmark", "MAXLEN", "~", str(trim_length(size)), "*",
            FIELD.decode(), "x" * size]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, timeout=600, check=True)
    found = _CSV_ROW.findall(done.stdout)
    if not found:
        raise RuntimeError(f"redis-benchmark printed no result: {done.stdout[-500:]!r}")
    return float(found[-1])
