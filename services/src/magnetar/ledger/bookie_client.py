"""The gRPC client of one bookie: one long-lived ``AddEntries`` stream plus unary/stream calls.

Adds: :meth:`BookieClient.send_adds` queues a run of entries (bounded, non-blocking) with one
callback (:meth:`BookieClient.send_add`: a run of one). A sender task coalesces whole queued runs
into one ``AddRequest`` while earlier batches are in flight (at most ``max_inflight_batches``); a
receiver task matches ``AddResponse`` batches back and calls each run's callback with the
``Status`` codes of its entries, in order. A watchdog fails the stream when a
batch waits longer than ``add_timeout_s``. On any stream failure every in-flight and queued add
gets a :class:`BookieUnavailable` callback, then the stream is reopened (with backoff) when the
next add arrives. Callbacks run on the loop, from this client's tasks; they must not block.

Every other call has a deadline (``read_timeout_s``); gRPC errors become
:class:`BookieUnavailable`. This is the only module of ``magnetar.ledger`` that imports grpc.

Concurrency: all methods are called from tasks on one event loop. The client owns its runner
task and cancels it in :meth:`close`.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import time
from collections.abc import AsyncGenerator, Callable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

import grpc
from grpc import aio

from magnetar.backoff import BOOKIE_RPC
from magnetar.ids import BookieId
from magnetar.ledger.config import LedgerClientConfig
from magnetar.ledger.errors import BookieUnavailable
from magnetar.telemetry import get_logger
from magnetar.tls import PemFiles
from magnetar.wire import bookie_pb2, bookie_pb2_grpc

log = get_logger(__name__)

AddResultCallback = Callable[[int | BaseException], None]
"""Called once per add: a ``bookie_pb2.Status`` code, or the exception that failed it."""

AddRunCallback = Callable[[list[int] | BaseException], None]
"""Called once per run of adds: their ``bookie_pb2.Status`` codes in order, or the exception
that failed them all."""

_CHANNEL_OPTIONS = [
    ("grpc.keepalive_time_ms", 10_000),
    ("grpc.keepalive_timeout_ms", 5_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.max_receive_message_length", 64 * 1024 * 1024),
    ("grpc.max_send_message_length", 64 * 1024 * 1024),
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 2_000),
]


class AddRequest(NamedTuple):
    """One add as every replica gets it (the same on each bookie of the write set).

    A NamedTuple rather than a frozen dataclass: one is built per add on the event loop, and
    a tuple is built faster (no ``object.__setattr__`` per field; docs/benchmarks.md,
    "Per-message costs")."""

    ledger_id: int
    entry_id: int
    lac: int  # the last-add-confirmed piggybacked on the entry
    payload: bytes
    digest: int
    master_key: bytes
    recovery: bool = False


def wire_add(add: AddRequest) -> bookie_pb2.AddEntry:
    return bookie_pb2.AddEntry(
        entry=bookie_pb2.Entry(
            ledger_id=add.ledger_id,
            entry_id=add.entry_id,
            last_add_confirmed=add.lac,
            payload=add.payload,
            digest=add.digest,
        ),
        master_key=add.master_key,
        recovery=add.recovery,
    )


class AddQueue:
    """The bounded FIFO of runs of adds in front of a bookie client's sender task (both
    clients). A run (consecutive adds of one ledger) is queued, batched and answered as one
    unit: one callback with the statuses of its adds in order.

    :meth:`offer` refuses (callback with :class:`BookieUnavailable`) once ``limit`` adds are
    queued; the sender waits with :meth:`wait`, takes batches of whole runs with :meth:`take`;
    :meth:`fail_all` empties the queue failing every run. On the loop only."""

    def __init__(self, bookie_id: BookieId, limit: int) -> None:
        self._bookie_id = bookie_id
        self._limit = limit
        self._runs: collections.deque[tuple[list[AddRequest], AddRunCallback]] = collections.deque()
        self._count = 0  # adds queued
        self._queued = asyncio.Event()

    def __bool__(self) -> bool:
        """Whether any run is queued."""
        return bool(self._runs)

    def offer(self, adds: list[AddRequest], callback: AddRunCallback) -> bool:
        if self._count >= self._limit:
            callback(BookieUnavailable(self._bookie_id, "add queue full"))
            return False
        self._runs.append((adds, callback))
        self._count += len(adds)
        self._queued.set()
        return True

    async def wait(self) -> None:
        """Return once at least one run is queued."""
        while not self._runs:
            self._queued.clear()
            await self._queued.wait()

    def take(
        self, max_entries: int, max_bytes: int | None = None
    ) -> list[tuple[list[AddRequest], AddRunCallback]]:
        """The oldest whole runs, in order: at most ``max_entries`` adds, and within
        ``max_bytes`` of payload (but always at least one run when any is queued)."""
        runs = self._runs
        if max_bytes is None and self._count <= max_entries:  # everything, no per-add look
            taken = list(runs)
            runs.clear()
            self._count = 0
            return taken
        taken = []
        entries = 0
        size = 0
        while runs:
            adds = runs[0][0]
            grown = entries + len(adds)
            if taken and grown > max_entries:
                break
            if max_bytes is not None:
                run_bytes = 0
                for add in adds:
                    run_bytes += len(add.payload)
                if taken and size + run_bytes > max_bytes:
                    break
                size += run_bytes
            taken.append(runs.popleft())
            entries = grown
        self._count -= entries
        return taken

    def fail_all(self, error: BaseException) -> None:
        queued = list(self._runs)
        self._runs.clear()
        self._count = 0
        for _, callback in queued:
            callback(error)


def one_result(callback: AddResultCallback, result: list[int] | BaseException) -> None:
    """A run of one's answer as an :data:`AddResultCallback` gets it."""
    callback(result if isinstance(result, BaseException) else result[0])


def _channel(address: str, tls: PemFiles | None) -> aio.Channel:
    """A channel to a bookie: TLS when ``tls`` is given (the bookie's certificate must name the
    host of its registered address)."""
    if tls is None:
        return aio.insecure_channel(address, options=_CHANNEL_OPTIONS)
    credentials = grpc.ssl_channel_credentials(
        root_certificates=tls.trust_certs,
        private_key=tls.private_key,
        certificate_chain=tls.cert_chain,
    )
    return aio.secure_channel(address, credentials, options=_CHANNEL_OPTIONS)


@dataclass
class _Batch:
    runs: list[tuple[list[AddRequest], AddRunCallback]]  # in request order
    deadline: float


class _StreamEnded(Exception):
    pass


class BookieClient:
    def __init__(self, bookie_id: BookieId, address: str, config: LedgerClientConfig) -> None:
        self.bookie_id = bookie_id
        self.address = address
        self._config = config
        self._channel = _channel(address, config.tls)
        self._stub = bookie_pb2_grpc.BookieStub(self._channel)
        # Sent with every call: the bookie's authentication (magnetar.bookie.call_auth).
        self._metadata: tuple[tuple[str, str], ...] | None = (
            (("authorization", f"Bearer {config.auth_token}"),) if config.auth_token else None
        )
        self._adds = AddQueue(bookie_id, config.max_queued_adds)
        self._inflight: dict[int, _Batch] = {}
        self._next_batch_id = 0
        self._runner: asyncio.Task[None] | None = None
        self._closed = False
        # The add stream's loop (not retry()): reset by each response, advanced by each failure.
        self._backoff = BOOKIE_RPC.backoff()

    # ------------------------------------------------------------------ adds

    def send_add(self, entry: AddRequest, callback: AddResultCallback) -> None:
        """Queue one add; ``callback`` gets its status (or error) later, from this client's task."""
        self.send_adds([entry], functools.partial(one_result, callback))

    def send_adds(self, adds: list[AddRequest], callback: AddRunCallback) -> None:
        """Queue a run of adds (consecutive entries of one ledger, sent in order in one
        request); ``callback`` gets their statuses (or the error) later, from this client's
        task."""
        if self._closed:
            callback(BookieUnavailable(self.bookie_id, "client closed"))
            return
        if not self._adds.offer(adds, callback):
            return
        if self._runner is None or self._runner.done():
            self._runner = asyncio.get_running_loop().create_task(
                self._run(), name=f"bookie-adds-{self.bookie_id}"
            )

    async def _run(self) -> None:
        while not self._closed:
            await self._adds.wait()
            call = self._stub.AddEntries(metadata=self._metadata)  # type: ignore[call-arg]  # requests are written
            try:
                async with asyncio.TaskGroup() as tg:
                    slots = asyncio.Semaphore(self._config.max_inflight_batches)
                    tg.create_task(self._send_loop(call, slots))
                    tg.create_task(self._receive_loop(call, slots))
                    tg.create_task(self._watchdog())
            except* Exception as group:  # any stream failure: fail its adds, reopen later
                reason = _describe(group.exceptions[0])
                call.cancel()
                log.warning("bookie_add_stream_failed", bookie_id=self.bookie_id, reason=reason)
                self._fail_all(BookieUnavailable(self.bookie_id, reason))
                await asyncio.sleep(self._backoff.next())

    async def _send_loop(self, call: aio.StreamStreamCall, slots: asyncio.Semaphore) -> None:  # type: ignore[type-arg]
        cfg = self._config
        while True:
            await self._adds.wait()
            await slots.acquire()
            runs = self._adds.take(cfg.max_batch_entries, cfg.max_batch_bytes)
            entries = [wire_add(add) for adds, _ in runs for add in adds]
            batch = _Batch(runs, time.monotonic() + cfg.add_timeout_s)
            self._next_batch_id += 1
            self._inflight[self._next_batch_id] = batch
            await call.write(bookie_pb2.AddRequest(batch_id=self._next_batch_id, entries=entries))

    async def _receive_loop(self, call: aio.StreamStreamCall, slots: asyncio.Semaphore) -> None:  # type: ignore[type-arg]
        async for response in call:
            batch = self._inflight.pop(response.batch_id, None)
            if batch is None:
                continue
            slots.release()
            self._backoff.reset()
            by_id = {(r.ledger_id, r.entry_id): r.status for r in response.results}
            internal = bookie_pb2.INTERNAL
            for adds, callback in batch.runs:
                callback([by_id.get((add.ledger_id, add.entry_id), internal) for add in adds])
        raise _StreamEnded("bookie closed the add stream")

    async def _watchdog(self) -> None:
        period = max(0.05, self._config.add_timeout_s / 4)
        while True:
            await asyncio.sleep(period)
            now = time.monotonic()
            if any(batch.deadline < now for batch in self._inflight.values()):
                raise BookieUnavailable(
                    self.bookie_id, f"add not acknowledged within {self._config.add_timeout_s}s"
                )

    def _fail_all(self, error: BookieUnavailable) -> None:
        batches = list(self._inflight.values())
        self._inflight.clear()
        for batch in batches:
            for _, callback in batch.runs:
                callback(error)
        self._adds.fail_all(error)

    # ------------------------------------------------------------------ unary / streaming

    @contextlib.contextmanager
    def _unavailable(self) -> Iterator[None]:
        """gRPC errors as :class:`BookieUnavailable`."""
        try:
            yield
        except grpc.RpcError as exc:
            raise BookieUnavailable(self.bookie_id, _describe(exc)) from exc

    async def read_entry(
        self, ledger_id: int, entry_id: int, *, fence: bool = False, master_key: bytes = b""
    ) -> bookie_pb2.ReadEntryResponse:
        request = bookie_pb2.ReadEntryRequest(
            ledger_id=ledger_id, entry_id=entry_id, fence=fence, master_key=master_key
        )
        with self._unavailable():
            response: bookie_pb2.ReadEntryResponse = await self._stub.ReadEntry(
                request, timeout=self._config.read_timeout_s, metadata=self._metadata
            )
        return response

    async def read_range(
        self, ledger_id: int, first: int, last: int, max_bytes: int = 0
    ) -> AsyncGenerator[bookie_pb2.ReadEntryResponse, None]:
        request = bookie_pb2.ReadRangeRequest(
            ledger_id=ledger_id, first_entry_id=first, last_entry_id=last, max_bytes=max_bytes
        )
        call = self._stub.ReadRange(
            request, timeout=self._config.read_timeout_s, metadata=self._metadata
        )
        try:
            with self._unavailable():
                async for response in call:
                    yield response
        finally:
            call.cancel()

    async def read_lac(self, ledger_id: int) -> bookie_pb2.ReadLacResponse:
        with self._unavailable():
            response: bookie_pb2.ReadLacResponse = await self._stub.ReadLastAddConfirmed(
                bookie_pb2.ReadLacRequest(ledger_id=ledger_id),
                timeout=self._config.read_timeout_s,
                metadata=self._metadata,
            )
        return response

    async def fence(self, ledger_id: int, master_key: bytes) -> bookie_pb2.FenceResponse:
        with self._unavailable():
            response: bookie_pb2.FenceResponse = await self._stub.Fence(
                bookie_pb2.FenceRequest(ledger_id=ledger_id, master_key=master_key),
                timeout=self._config.read_timeout_s,
                metadata=self._metadata,
            )
        return response

    async def delete_ledger(self, ledger_id: int) -> int:
        with self._unavailable():
            response: bookie_pb2.DeleteLedgerResponse = await self._stub.DeleteLedger(
                bookie_pb2.DeleteLedgerRequest(ledger_id=ledger_id),
                timeout=self._config.read_timeout_s,
                metadata=self._metadata,
            )
        return int(response.status)

    async def list_ledgers(self, include_ranges: bool = False) -> list[bookie_pb2.LedgerListing]:
        call = self._stub.ListLedgers(
            bookie_pb2.ListLedgersRequest(include_ranges=include_ranges),
            timeout=self._config.read_timeout_s,
            metadata=self._metadata,
        )
        with self._unavailable():
            return [listing async for listing in call]

    async def list_entries(
        self, first_ledger_id: int = 0, last_ledger_id: int = 0, max_chunk_entries: int = 0
    ) -> AsyncGenerator[list[bookie_pb2.EntryInfo], None]:
        """The bookie's entries of ledgers first..last (``last_ledger_id`` 0: no end) in (ledger,
        entry) order, one bounded chunk at a time (the audit's ``ListEntries``). The stream as a
        whole has no deadline (a big bookie takes a while); each chunk must arrive within
        ``read_timeout_s`` or the listing fails with :class:`BookieUnavailable`."""
        request = bookie_pb2.ListEntriesRequest(
            first_ledger_id=first_ledger_id,
            last_ledger_id=last_ledger_id,
            max_chunk_entries=max_chunk_entries,
        )
        call = self._stub.ListEntries(request, metadata=self._metadata)
        chunks = call.__aiter__()
        try:
            while True:
                try:
                    with self._unavailable():
                        async with asyncio.timeout(self._config.read_timeout_s):
                            chunk = await anext(chunks)
                except StopAsyncIteration:
                    return
                except TimeoutError as exc:
                    raise BookieUnavailable(
                        self.bookie_id,
                        f"no listing chunk within {self._config.read_timeout_s}s",
                    ) from exc
                yield list(chunk.entries)
        finally:
            call.cancel()

    async def info(self) -> bookie_pb2.BookieInfo:
        """The bookie's ``GetInfo`` (id, mode, disk, ledger count): also a reachability probe."""
        with self._unavailable():
            response: bookie_pb2.BookieInfo = await self._stub.GetInfo(
                bookie_pb2.BookieInfoRequest(),
                timeout=self._config.read_timeout_s,
                metadata=self._metadata,
            )
        return response

    async def close(self) -> None:
        self._closed = True
        if self._runner is not None:
            self._runner.cancel()
            await asyncio.wait({self._runner})  # waits without re-raising the runner's cancel
            self._runner = None
        self._fail_all(BookieUnavailable(self.bookie_id, "client closed"))
        await self._channel.close(grace=None)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, aio.AioRpcError):
        return f"{exc.code().name}: {exc.details()}"
    return str(exc) or type(exc).__name__
