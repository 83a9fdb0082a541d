"""Run one bookie process: the entry point's TaskGroup, start-up order and ordered shutdown.

Start-up: open the metadata store -> verify or create the cookie (a mismatch ends the process
with exit code 2 and a message saying what is wrong) -> open the bookie (journal replay; storage
locked by another process on the same data dir ends it with exit code 3) -> serve HTTP
(``http_server_port``: /metrics, /api/v1/bookie/state, /api/v1/bookie/is_ready) -> serve gRPC
-> register (the bookie is ready from here; a decommission request in the metadata store turns it
read-only, :mod:`magnetar.bookie.decommission`) -> print the ready line. SIGTERM/SIGINT stop it in
order, each step under a timeout: report shutting down (not ready), stop accepting calls (each
add stream answers the batches it already journalled once they are durable, then ends with
UNAVAILABLE so that its client changes ensemble at once; other calls get a short grace),
unregister, drain the journal and close storage, stop the HTTP server, close the metadata store.

Concurrency: everything runs on one loop inside one ``asyncio.TaskGroup`` built here; the
registration loop is its long-lived task.
"""

from __future__ import annotations

import asyncio
import sys
from contextlib import AsyncExitStack

from magnetar.bookie.bookie import Bookie
from magnetar.bookie.bookie_metrics import observe_bookie
from magnetar.bookie.call_auth import CallGuard
from magnetar.bookie.cookie import verify_or_create_cookie
from magnetar.bookie.decommission import DecommissionWatch
from magnetar.bookie.errors import CookieMismatch, StorageUnavailable
from magnetar.bookie.http_service import BookieHttpService
from magnetar.bookie.registration import Registration
from magnetar.bookie.servicer import BookieServicer, start_server
from magnetar.bookie.settings import BookieSettings
from magnetar.ids import BookieId
from magnetar.metadata.factory import open_store
from magnetar.shutdown import STOP_SIGNALS, shutdown_step, stop_event
from magnetar.telemetry import get_logger
from magnetar.telemetry.http_server import HttpServer
from magnetar.telemetry.metrics import Metrics

log = get_logger(__name__)

READY_LINE = "magnetar bookie ready"
EXIT_COOKIE_MISMATCH = 2
EXIT_STORAGE_UNAVAILABLE = 3
_GRACE_S = 1.0  # for calls other than add streams, which drain() ends


def _refuse(event: str, bookie_id: BookieId, problem: Exception, code: int) -> int:
    log.error(event, bookie_id=bookie_id, problem=str(problem))
    print(f"magnetar bookie: refusing to start: {problem}", file=sys.stderr, flush=True)
    return code


def _remove_stop_handlers(loop: asyncio.AbstractEventLoop) -> None:
    for sig in STOP_SIGNALS:
        loop.remove_signal_handler(sig)


async def serve(settings: BookieSettings, guard: CallGuard | None = None) -> int:
    """Run until SIGTERM/SIGINT; return the process exit code. With ``guard`` every gRPC call
    is authenticated first (the composition builds it from the authentication settings)."""
    loop = asyncio.get_running_loop()
    stop = stop_event()
    bookie_id = BookieId(settings.effective_bookie_id)
    config = settings.bookie_config()
    timeout = settings.shutdown_step_timeout_s

    async with AsyncExitStack() as stack:
        stack.callback(_remove_stop_handlers, loop)  # last: a signal still stops the steps
        store = await open_store(
            settings.metadata_url,
            session_timeout_s=settings.session_timeout_s,
            tls=settings.metadata_store_tls(),
        )
        stack.push_async_callback(shutdown_step, "close_metadata", store.close(), timeout)
        try:
            config.data_dir.mkdir(parents=True, exist_ok=True)
            await verify_or_create_cookie(
                store, bookie_id, config.data_dir, config.journal_dir, config.ledger_dir
            )
        except CookieMismatch as exc:
            return _refuse("bookie_cookie_mismatch", bookie_id, exc, EXIT_COOKIE_MISMATCH)
        except (StorageUnavailable, OSError) as exc:  # the data dir cannot be made
            return _refuse("bookie_storage_unavailable", bookie_id, exc, EXIT_STORAGE_UNAVAILABLE)
        try:
            bookie = await Bookie.open(config)
        except StorageUnavailable as exc:
            return _refuse("bookie_storage_unavailable", bookie_id, exc, EXIT_STORAGE_UNAVAILABLE)
        server = None
        registration = Registration(store, bookie_id, settings.address, settings.rack)
        decommission = DecommissionWatch(store, bookie_id, bookie.set_decommissioned)
        metrics = Metrics()
        observe_bookie(metrics, bookie)
        http = BookieHttpService(bookie, metrics)
        http_server = HttpServer(http.routes())
        try:
            http_port = await http_server.start(settings.bind_address, settings.http_server_port)
            servicer = BookieServicer(bookie, bookie_id)
            server, _ = await start_server(
                servicer,
                f"{settings.bind_address}:{settings.port}",
                settings.server_tls(),
                guard,
            )
            bookie.add_mode_listener(registration.set_read_only)
            registration.set_read_only(bookie.read_only)
            async with asyncio.TaskGroup() as tg:
                registering = tg.create_task(registration.run(), name="bookie-registration")
                watching = tg.create_task(decommission.run(), name="bookie-decommission")
                async with asyncio.timeout(settings.register_timeout_s):
                    await registration.wait_registered()
                http.registered = True
                log.info(
                    "bookie_ready",
                    bookie_id=bookie_id,
                    address=settings.address,
                    http_port=http_port,
                )
                print(f"{READY_LINE} id={bookie_id} address={settings.address}", flush=True)
                await stop.wait()
                log.info("bookie_stopping", bookie_id=bookie_id)
                http.shutting_down = True
                servicer.drain()  # add streams answer what they hold, then end
                await shutdown_step("stop_accepting", server.stop(_GRACE_S), timeout)
                server = None
                registering.cancel()
                watching.cancel()
        finally:
            if server is not None:
                await shutdown_step("stop_accepting", server.stop(0), timeout)
            await shutdown_step("unregister", registration.unregister(), timeout)
            http.shutting_down = True
            await shutdown_step("close_bookie", bookie.close(drain_timeout_s=timeout), timeout * 2)
            await shutdown_step("stop_http", http_server.close(), timeout)
            metrics.shutdown()
    log.info("bookie_stopped", bookie_id=bookie_id)
    return 0
