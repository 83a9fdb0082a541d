"""The bookie's gRPC servicer: translate wire messages to :class:`Bookie` calls and back.

Thin on purpose: every rule lives in :mod:`magnetar.bookie.bookie`. Expected conditions travel
as ``Status`` codes in responses (the one mapping is :data:`magnetar.bookie.local.WIRE_STATUS`,
and :class:`~magnetar.bookie.local.LocalBookie` builds every response); a bookie that is
shutting down aborts calls with gRPC ``UNAVAILABLE``.

``AddEntries`` pipelines: a reader task takes batches off the stream and submits each batch's
entries to the journal in arrival order, without waiting for earlier batches to be fsynced; a
waiter task per batch sends that batch's response once all its entries are durable. Responses
may therefore overtake each other; clients match them by ``batch_id``. The number of batches
in flight per stream is bounded, which also bounds the response queue.

A stop (:meth:`BookieServicer.drain`) ends every add stream without waiting for its client:
each stream stops reading requests, sends the responses of the batches it already submitted
once they are durable (nothing is acknowledged before its journal fsync), then ends with
``UNAVAILABLE``, so the client changes its ensemble at once instead of the server's grace
period running out on streams that never end by themselves; new add streams are refused.

Concurrency: grpc.aio runs each call as a task on the loop; the servicer keeps no shared state
besides the bookie.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from magnetar.bookie.bookie import Bookie
from magnetar.bookie.bookie_protocol import PendingAdds
from magnetar.bookie.call_auth import (
    CallCredentials,
    CallGuard,
    CallRefused,
    RoleNotAllowed,
    bearer_token,
)
from magnetar.bookie.errors import BookieClosed, BookieError
from magnetar.bookie.local import WIRE_STATUS, LocalBookie, add_op
from magnetar.tasks import TaskSet
from magnetar.telemetry import get_logger
from magnetar.tls import LoadedServerPem, PemServerTls, TlsConfigError
from magnetar.wire import bookie_pb2 as pb
from magnetar.wire import bookie_pb2_grpc as pb_grpc

log = get_logger(__name__)

MAX_MESSAGE_BYTES = 64 * 1024 * 1024

Context = grpc.aio.ServicerContext[Any, Any]


class BookieServicer(pb_grpc.BookieServicer):
    def __init__(self, bookie: Bookie, bookie_id: str, max_inflight_batches: int = 64) -> None:
        self._bookie = bookie
        self._local = LocalBookie(bookie)
        self._bookie_id = bookie_id
        self._max_inflight = max_inflight_batches
        self._draining = False
        self._readers: set[asyncio.Task[None]] = set()  # each add stream's request reader

    def drain(self) -> None:
        """Stop: every add stream stops reading, answers what it submitted, then ends with
        ``UNAVAILABLE``; later add streams are refused. Call before the server's ``stop``."""
        self._draining = True
        for reader in self._readers:
            reader.cancel()

    async def AddEntries(
        self, request_iterator: AsyncIterator[pb.AddRequest], context: Context
    ) -> AsyncIterator[pb.AddResponse]:
        if self._draining:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "bookie unavailable: stopping")
        responses: asyncio.Queue[pb.AddResponse | None] = asyncio.Queue(self._max_inflight)
        permits = asyncio.Semaphore(self._max_inflight)
        waiters = TaskSet("bookie-add-responses")
        closing: list[BookieError] = []

        async def finish(request: pb.AddRequest, pending: PendingAdds) -> None:
            try:
                statuses = await pending.wait()
                results = [
                    pb.AddResult(
                        ledger_id=add.entry.ledger_id,
                        entry_id=add.entry.entry_id,
                        status=WIRE_STATUS[status],
                    )
                    for add, status in zip(request.entries, statuses, strict=True)
                ]
                await responses.put(pb.AddResponse(batch_id=request.batch_id, results=results))
            finally:
                permits.release()

        async def read_requests() -> None:
            try:
                try:
                    async for request in request_iterator:
                        await permits.acquire()
                        ops = [add_op(add) for add in request.entries]
                        try:
                            pending = await self._bookie.submit_adds(ops)
                        except BookieError as exc:
                            permits.release()
                            closing.append(exc)
                            break
                        waiters.spawn(finish(request, pending), name="bookie-add-response")
                except asyncio.CancelledError:
                    # drain()'s cancel (and no other) is this stream's end, not the caller's.
                    task = asyncio.current_task()
                    if not self._draining or task is None or task.uncancel() > 0:
                        raise
                    closing.append(BookieClosed("the bookie is stopping"))
                await waiters.join()
            finally:
                await responses.put(None)

        reader = asyncio.create_task(read_requests(), name="bookie-add-stream")
        self._readers.add(reader)
        reader.add_done_callback(self._readers.discard)
        try:
            while (response := await responses.get()) is not None:
                yield response
            await reader
        finally:
            reader.cancel()
            await waiters.close()
            await asyncio.gather(reader, return_exceptions=True)
        if closing:
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"bookie unavailable: {closing[0]}")

    async def ReadEntry(
        self, request: pb.ReadEntryRequest, context: Context
    ) -> pb.ReadEntryResponse:
        try:
            return await self._local.read_entry(
                request.ledger_id,
                request.entry_id,
                fence=request.fence,
                master_key=request.master_key,
            )
        except BookieError as exc:
            await context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))

    async def ReadRange(
        self, request: pb.ReadRangeRequest, context: Context
    ) -> AsyncIterator[pb.ReadEntryResponse]:
        async for response in self._local.read_range(
            request.ledger_id, request.first_entry_id, request.last_entry_id, request.max_bytes
        ):
            yield response

    async def ReadLastAddConfirmed(
        self, request: pb.ReadLacRequest, context: Context
    ) -> pb.ReadLacResponse:
        return await self._local.read_lac(request.ledger_id)

    async def Fence(self, request: pb.FenceRequest, context: Context) -> pb.FenceResponse:
        try:
            return await self._local.fence(request.ledger_id, request.master_key)
        except BookieError as exc:
            await context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))

    async def DeleteLedger(
        self, request: pb.DeleteLedgerRequest, context: Context
    ) -> pb.DeleteLedgerResponse:
        try:
            status = await self._local.delete_ledger(request.ledger_id)
        except BookieError as exc:
            await context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
        return pb.DeleteLedgerResponse(status=status)  # type: ignore[arg-type]

    async def ListLedgers(
        self, request: pb.ListLedgersRequest, context: Context
    ) -> AsyncIterator[pb.LedgerListing]:
        for listing in await self._local.list_ledgers(request.include_ranges):
            yield listing

    async def ListEntries(
        self, request: pb.ListEntriesRequest, context: Context
    ) -> AsyncIterator[pb.EntryListingChunk]:
        if request.last_ledger_id and request.last_ledger_id < request.first_ledger_id:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"last_ledger_id {request.last_ledger_id} is below first_ledger_id "
                f"{request.first_ledger_id}",
            )
        async for chunk in self._local.list_entries(
            request.first_ledger_id, request.last_ledger_id, request.max_chunk_entries
        ):
            yield chunk

    async def GetInfo(self, request: pb.BookieInfoRequest, context: Context) -> pb.BookieInfo:
        disk = self._bookie.disk
        return pb.BookieInfo(
            bookie_id=self._bookie_id,
            read_only=self._bookie.read_only,
            free_disk_bytes=disk.free_bytes,
            total_disk_bytes=disk.total_bytes,
            ledger_count=self._bookie.ledger_count,
        )


def server_options() -> list[tuple[str, Any]]:
    """Channel options for the bookie's server and its clients: room for 64 KiB-entry batches.

    Clients ping idle channels every few seconds (keep-alive); the server must accept that:
    with gRPC's default minimum ping interval (5 minutes) it answers GOAWAY "too_many_pings",
    which ends the add stream. So pings are accepted at any rate without strikes.
    """
    return [
        ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
        ("grpc.keepalive_time_ms", 30_000),
        ("grpc.http2.max_pings_without_data", 0),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.min_recv_ping_interval_without_data_ms", 100),
        ("grpc.http2.max_ping_strikes", 0),
    ]


def server_credentials(tls: PemServerTls) -> grpc.ServerCredentials:
    """TLS credentials that re-read the certificate files when they change: gRPC asks the
    fetcher at new handshakes, and it looks at the files at most once per refresh interval."""
    loaded = tls.load()
    digest, checked = loaded.digest, time.monotonic()

    def configuration(pem: LoadedServerPem) -> grpc.ServerCertificateConfiguration:
        return grpc.ssl_server_certificate_configuration(
            [(pem.private_key, pem.cert_chain)], root_certificates=pem.trust_certs
        )

    def fetch() -> grpc.ServerCertificateConfiguration | None:
        nonlocal digest, checked
        now = time.monotonic()
        if now - checked < tls.refresh_interval_s:
            return None
        checked = now
        try:
            fresh = tls.load()
        except TlsConfigError as exc:
            log.warning("tls_reload_failed", cert=tls.cert_file, error=str(exc))
            return None
        if fresh.digest == digest:
            return None
        digest = fresh.digest
        log.info("tls_reloaded", cert=tls.cert_file)
        return configuration(fresh)

    return grpc.dynamic_ssl_server_credentials(
        configuration(loaded),
        fetch,  # type: ignore[arg-type]  # gRPC takes None for "unchanged"; the stubs do not say
        require_client_authentication=tls.require_client_auth,
    )


class AuthenticatingInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[type-arg]
    """Runs ``guard`` before every call and stream: a refused caller gets UNAUTHENTICATED with
    the guard's reason (PERMISSION_DENIED when its role is not allowed) and the call never
    reaches the servicer. The token is never logged; a refusal logs the method and the reason."""

    def __init__(self, guard: CallGuard) -> None:
        self._guard = guard

    def _admit(self, method: str, context: Context) -> bool:
        """True when the caller may go on; else the refusal is set on ``context`` and the call
        returns at once, before reading any request. (A client that is still writing requests
        to a refused stream may see its write fail with gRPC's INTERNAL "Internal error from
        Core" instead of the status; the bookie's log names the refusal either way.)"""
        peer = list(context.auth_context().get("x509_common_name") or [])
        try:
            credentials = CallCredentials(
                token=bearer_token(context.invocation_metadata() or ()),
                peer_common_name=peer[0].decode(errors="replace") if peer else None,
            )
            self._guard.check(credentials)
        except CallRefused as exc:
            log.warning("bookie_call_refused", method=method, reason=str(exc))
            context.set_code(
                grpc.StatusCode.PERMISSION_DENIED
                if isinstance(exc, RoleNotAllowed)
                else grpc.StatusCode.UNAUTHENTICATED
            )
            context.set_details(f"bookie: {exc}")
            return False
        return True

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Any]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Any:
        handler: Any = await continuation(handler_call_details)
        if handler is None:
            return None
        method = handler_call_details.method
        admit = self._admit
        codecs: dict[str, Any] = {
            "request_deserializer": handler.request_deserializer,
            "response_serializer": handler.response_serializer,
        }
        if handler.unary_unary is not None:
            unary = handler.unary_unary

            async def unary_call(request: Any, context: Context) -> Any:
                if not admit(method, context):
                    return None
                return await unary(request, context)

            return grpc.unary_unary_rpc_method_handler(unary_call, **codecs)
        if handler.unary_stream is not None:
            streaming = handler.unary_stream

            async def unary_stream_call(request: Any, context: Context) -> AsyncIterator[Any]:
                if not admit(method, context):
                    return
                async for response in streaming(request, context):
                    yield response

            return grpc.unary_stream_rpc_method_handler(unary_stream_call, **codecs)
        if handler.stream_stream is not None:
            bidi = handler.stream_stream

            async def stream_stream_call(requests: Any, context: Context) -> AsyncIterator[Any]:
                if not admit(method, context):
                    return
                async for response in bidi(requests, context):
                    yield response

            return grpc.stream_stream_rpc_method_handler(stream_stream_call, **codecs)
        raise TypeError(f"bookie method {method} has a shape this interceptor does not wrap")


async def start_server(
    servicer: BookieServicer,
    address: str,
    tls: PemServerTls | None = None,
    guard: CallGuard | None = None,
) -> tuple[grpc.aio.Server, int]:
    """Start a grpc.aio server for ``servicer`` on ``address`` (host:port); return it, port.
    With ``tls`` the port serves TLS only (the bookie's certificate; client certificates
    required when ``tls.require_client_auth``). With ``guard`` every call is authenticated
    first (:class:`AuthenticatingInterceptor`)."""
    interceptors = [AuthenticatingInterceptor(guard)] if guard is not None else []
    server = grpc.aio.server(options=server_options(), interceptors=interceptors)
    pb_grpc.add_BookieServicer_to_server(servicer, server)
    if tls is None:
        port = server.add_insecure_port(address)
    else:
        port = server.add_secure_port(address, server_credentials(tls))
    if port == 0:
        raise OSError(f"cannot listen on {address}")
    await server.start()
    return server, port
