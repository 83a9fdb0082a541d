"""The standalone process: ``magnetar standalone``, a broker with its own bookie and metadata.

A composition of services, so it sits above them: it wires a bookie (:mod:`magnetar.bookie`)
into a broker (:mod:`magnetar.broker`), which never import each other (an import contract in
pyproject.toml keeps it so).

Start-up: RocksDB metadata at DIR/metadata -> bookie cookie -> the bookie (journal replay) at
DIR/bookie, serving gRPC on a loopback port (for external tools), registered -> the BookKeeper
client, which reaches this bookie in-process (:class:`~magnetar.bookie.local.LocalBookie`, no
gRPC) -> then the broker as :func:`magnetar.broker.process.run_broker` runs it, with
E=Wq=Aq=1 managed ledgers. The bookie's metrics join the broker's on the web port's
``/metrics`` when the command line passes the process's metrics. A cookie mismatch or storage
another process holds ends it with exit code 2 and a message. SIGTERM/SIGINT stop the broker
in order, then the BookKeeper client, the bookie's registration, its gRPC server, the bookie
and the metadata store, each step under a timeout.

Concurrency: one loop, one ``asyncio.TaskGroup`` built here; its long-lived tasks are the
bookie registration and (inside :func:`~magnetar.broker.process.run_broker`) the web server.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack

from magnetar.bookie.bookie import Bookie
from magnetar.bookie.bookie_metrics import observe_bookie
from magnetar.bookie.cookie import verify_or_create_cookie
from magnetar.bookie.errors import CookieMismatch, StorageUnavailable
from magnetar.bookie.local import LocalBookie
from magnetar.bookie.registration import Registration
from magnetar.bookie.servicer import BookieServicer, start_server
from magnetar.broker.process import run_broker, server_tls, tune_interpreter
from magnetar.broker.replication import RemoteClusters
from magnetar.broker.web_service import AppFactory
from magnetar.ids import BookieId
from magnetar.ledger.client import BookKeeper
from magnetar.ledger.config import LedgerClientConfig
from magnetar.metadata.factory import open_store
from magnetar.shutdown import shutdown_step, stop_event
from magnetar.standalone.settings import StandaloneSettings
from magnetar.telemetry import get_logger
from magnetar.telemetry.metrics import Metrics

log = get_logger(__name__)

STANDALONE_BOOKIE_ID = BookieId("standalone-bookie")
EXIT_REFUSED = 2


async def _stop_server(
    servicer: BookieServicer, stop: Callable[[float], Awaitable[object]]
) -> None:
    """End the add streams (answered, then UNAVAILABLE), then stop the gRPC server."""
    servicer.drain()
    await stop(1.0)


async def serve_standalone(
    settings: StandaloneSettings,
    app_factory: AppFactory | None = None,
    metrics: Metrics | None = None,
    remotes: RemoteClusters | None = None,
) -> int:
    """Run ``magnetar standalone`` until SIGTERM/SIGINT; return the exit code. ``remotes``:
    replication to other clusters (see :func:`~magnetar.broker.process.run_broker`)."""
    tune_interpreter(settings)
    tls = server_tls(settings)  # a bad TLS file ends the start before anything is opened
    stop = stop_event()
    timeout = settings.shutdown_step_timeout_s
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    async with AsyncExitStack() as stack:
        store = await open_store(
            f"rocksdb://{settings.metadata_dir}", session_timeout_s=settings.session_timeout_s
        )
        stack.push_async_callback(shutdown_step, "close_metadata", store.close(), timeout)
        config = settings.bookie_storage_config()
        try:
            config.data_dir.mkdir(parents=True, exist_ok=True)
            await verify_or_create_cookie(
                store, STANDALONE_BOOKIE_ID, config.data_dir, config.journal_dir, config.ledger_dir
            )
            bookie = await Bookie.open(config)
        except (CookieMismatch, StorageUnavailable, OSError) as exc:
            print(f"magnetar standalone: refusing to start: {exc}", file=sys.stderr, flush=True)
            return EXIT_REFUSED
        if metrics is not None:
            observe_bookie(metrics, bookie)
        stack.push_async_callback(
            shutdown_step, "close_bookie", bookie.close(drain_timeout_s=timeout), timeout * 2
        )
        servicer = BookieServicer(bookie, STANDALONE_BOOKIE_ID)
        grpc_server, bookie_port = await start_server(servicer, "127.0.0.1:0")
        stack.push_async_callback(
            shutdown_step, "stop_bookie_server", _stop_server(servicer, grpc_server.stop), timeout
        )
        registration = Registration(store, STANDALONE_BOOKIE_ID, f"127.0.0.1:{bookie_port}")
        stack.push_async_callback(shutdown_step, "unregister", registration.unregister(), timeout)
        async with asyncio.TaskGroup() as tg:
            registering = tg.create_task(registration.run(), name="bookie-registration")
            try:
                async with asyncio.timeout(30):
                    await registration.wait_registered()
                bk = await BookKeeper.start(
                    store,
                    LedgerClientConfig(bookie_wait_s=10.0),
                    local_bookies={STANDALONE_BOOKIE_ID: LocalBookie(bookie)},
                )
                try:
                    await run_broker(
                        settings, store, bk, stop, app_factory, tls=tls, remotes=remotes
                    )
                finally:
                    await shutdown_step("close_bookkeeper", bk.close(), timeout)
            finally:
                registering.cancel()
    log.info("standalone_stopped")
    return 0
