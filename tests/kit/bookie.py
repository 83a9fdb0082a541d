"""Run real ``magnetar bookie`` processes on free loopback ports, and talk to them over gRPC.

::

    bk = BookieProcess(data_dir=tmp_path / "b1", metadata_url=etcd_server.url)
    bk.start()                      # waits for the ready line; raises BookieStartError with the log
    bk.address, bk.id               # "127.0.0.1:PORT"; a unique "bookie-..." id (or pass one)
    bk.http_url                     # "http://127.0.0.1:HTTP_PORT": /metrics, /api/v1/bookie/...
    bk.kill()                       # SIGKILL;  bk.stop() sends SIGTERM and waits
    bk.start()                      # restart on the same data dir and port
    await bk.astart() / await bk.astop() / await bk.akill()   # the same, off the event loop

    async with BookieClient(bk.address) as client:
        results = await client.add([entry(1, 0, b"x")], master_key=b"mk")   # one batch, acked
        response = await client.read_entry(1, 0)

    ledgers = await client_seeing(store, config, {bk.bookie_id})   # a BookKeeper seeing only bk
    assert await written_and_read(ledgers, [b"a", b"b"]) == [b"a", b"b"]   # one ledger

The process's stdout and stderr go to ``<data_dir>.log`` beside the data dir (appended across
restarts); :meth:`BookieProcess.log_text` returns it for assertions and failure messages.
"""

from __future__ import annotations

import asyncio
import itertools
import struct
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import ClassVar

import crc32c
import grpc

from magnetar.ledger import BookKeeper, LedgerClientConfig
from magnetar.metadata import MetadataStore
from magnetar.wire import bookie_pb2 as pb
from magnetar.wire import bookie_pb2_grpc as pb_grpc
from tests.kit.ports import free_port
from tests.kit.process import MAGNETAR_CLI, ProcessStartError, ServerProcess

READY_LINE = "magnetar bookie ready"
_MAX_MESSAGE = 64 * 1024 * 1024


class BookieStartError(ProcessStartError):
    """The bookie exited or did not get ready; the message holds its log tail."""


@dataclass
class BookieProcess(ServerProcess):
    ready_line: ClassVar[str] = READY_LINE
    start_error: ClassVar[type[ProcessStartError]] = BookieStartError
    redrawn_ports: ClassVar[tuple[str, ...]] = ("port", "http_port")

    data_dir: Path
    metadata_url: str
    port: int = field(default_factory=free_port)
    http_port: int = field(default_factory=free_port)  # /metrics and the state endpoints
    # Unique by default: tests share one etcd, and a cookie left under a reused port-based id
    # would make a later bookie on a fresh data dir refuse to start.
    bookie_id: str = field(default_factory=lambda: f"bookie-{uuid.uuid4().hex[:12]}")
    session_timeout_s: float | None = 3.0
    journal_sync: bool = True
    extra_args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None
    _log_offset: int = 0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def id(self) -> str:
        return self.bookie_id

    def command(self) -> list[str]:
        args = [
            *MAGNETAR_CLI, "bookie",
            "--data-dir", str(self.data_dir),
            "--port", str(self.port),
            "--http-server-port", str(self.http_port),
            "--metadata", self.metadata_url,
            "--bind-address", "127.0.0.1",
            "--journal-sync" if self.journal_sync else "--no-journal-sync",
        ]  # fmt: skip
        args += ["--bookie-id", self.bookie_id]
        if self.session_timeout_s is not None:
            args += ["--session-timeout-s", str(self.session_timeout_s)]
        return args + self.extra_args

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def describe(self) -> str:
        return f"bookie {self.address}"


def digest(ledger_id: int, entry_id: int, lac: int, payload: bytes) -> int:
    """CRC32-C over ledger id | entry id | lac (signed) | payload, as writers compute it."""
    return int(crc32c.crc32c(struct.pack(">QQq", ledger_id, entry_id, lac) + payload))


def entry(ledger_id: int, entry_id: int, payload: bytes, lac: int | None = None) -> pb.Entry:
    lac = entry_id - 1 if lac is None else lac
    return pb.Entry(
        ledger_id=ledger_id,
        entry_id=entry_id,
        last_add_confirmed=lac,
        payload=payload,
        digest=digest(ledger_id, entry_id, lac, payload),
    )


class BookieClient:
    """A minimal async client of one bookie for tests: one AddEntries stream, unary calls."""

    def __init__(self, address: str, timeout: float = 10.0) -> None:
        self._channel = grpc.aio.insecure_channel(
            address,
            options=[
                ("grpc.max_send_message_length", _MAX_MESSAGE),
                ("grpc.max_receive_message_length", _MAX_MESSAGE),
            ],
        )
        self.stub = pb_grpc.BookieStub(self._channel)
        self.timeout = timeout
        self._batch_ids = itertools.count(1)

    async def __aenter__(self) -> BookieClient:
        return self

    async def __aexit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        await self._channel.close(None)

    async def add_batches(
        self,
        batches: Sequence[Sequence[pb.Entry]],
        master_key: bytes,
        recovery: bool = False,
    ) -> dict[int, list[pb.AddResult]]:
        """Send every batch on one stream without waiting; return results by batch index."""
        ids = [next(self._batch_ids) for _ in batches]

        async def requests() -> AsyncIterator[pb.AddRequest]:
            for batch_id, batch in zip(ids, batches, strict=True):
                yield pb.AddRequest(
                    batch_id=batch_id,
                    entries=[
                        pb.AddEntry(entry=e, master_key=master_key, recovery=recovery)
                        for e in batch
                    ],
                )

        by_id: dict[int, list[pb.AddResult]] = {}
        call = self.stub.AddEntries(requests(), timeout=self.timeout)
        async for response in call:
            by_id[response.batch_id] = list(response.results)
        return {i: by_id[batch_id] for i, batch_id in enumerate(ids) if batch_id in by_id}

    async def add(
        self, entries: Sequence[pb.Entry], master_key: bytes, recovery: bool = False
    ) -> list[pb.AddResult]:
        return (await self.add_batches([entries], master_key, recovery))[0]

    async def read_entry(
        self, ledger_id: int, entry_id: int, fence: bool = False, master_key: bytes = b""
    ) -> pb.ReadEntryResponse:
        request = pb.ReadEntryRequest(
            ledger_id=ledger_id, entry_id=entry_id, fence=fence, master_key=master_key
        )
        return await self.stub.ReadEntry(request, timeout=self.timeout)

    async def read_range(self, ledger_id: int, first: int, last: int) -> list[pb.ReadEntryResponse]:
        request = pb.ReadRangeRequest(ledger_id=ledger_id, first_entry_id=first, last_entry_id=last)
        return [r async for r in self.stub.ReadRange(request, timeout=self.timeout)]

    async def fence(self, ledger_id: int, master_key: bytes) -> pb.FenceResponse:
        request = pb.FenceRequest(ledger_id=ledger_id, master_key=master_key)
        return await self.stub.Fence(request, timeout=self.timeout)

    async def info(self) -> pb.BookieInfo:
        return await self.stub.GetInfo(pb.BookieInfoRequest(), timeout=self.timeout)

    async def list_ledgers(self, include_ranges: bool = True) -> list[pb.LedgerListing]:
        request = pb.ListLedgersRequest(include_ranges=include_ranges)
        return [r async for r in self.stub.ListLedgers(request, timeout=self.timeout)]


async def client_seeing(
    store: MetadataStore, config: LedgerClientConfig, bookie_ids: set[str]
) -> BookKeeper:
    """A BookKeeper client whose registry holds exactly ``bookie_ids`` as writable (the
    session's etcd may hold registrations of other tests' bookies: they expire)."""
    bk = await BookKeeper.start(store, config)
    deadline = time.monotonic() + 15
    while bk.registry.writable() != bookie_ids:
        assert time.monotonic() < deadline, f"registry {bk.registry.writable()} != {bookie_ids}"
        await asyncio.sleep(0.1)
    return bk


async def written_and_read(bk: BookKeeper, payloads: Sequence[bytes]) -> list[bytes]:
    """Write ``payloads`` to a new 1/1/1 ledger (each acked at its entry id), close it, and
    return what reading it back gives."""
    wh = await bk.create_ledger(1, 1, 1)
    for i, payload in enumerate(payloads):
        assert await wh.append(payload) == i
    await wh.close()
    rh = await bk.open_ledger(wh.ledger_id)
    entries = await asyncio.wait_for(rh.read(0, len(payloads) - 1), 10)
    return [e.payload for e in entries]
