"""Run one autorecovery process: the entry point's TaskGroup, start-up and ordered shutdown.

Start-up: open the metadata store -> start a ledger client (the bookie registry and bookie
connections; recovery of ledgers whose writer is gone goes through it) -> serve HTTP -> start
the auditor's campaign and the replication worker -> print the ready line. SIGTERM/SIGINT stop
it in order, each step under a timeout: stop the worker and the auditor (its leadership is
resigned, so another process takes over at once), close the ledger client, stop the HTTP
server, close the metadata store (its locks and election key vanish with the session).

Concurrency: everything runs on one loop inside one ``asyncio.TaskGroup`` built here.
"""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack

from magnetar.autorecovery.auditor import Auditor
from magnetar.autorecovery.http_service import AutorecoveryHttpService
from magnetar.autorecovery.metrics import observe_autorecovery
from magnetar.autorecovery.replicator import LedgerReplicator, ReplicationStats
from magnetar.autorecovery.settings import AutorecoverySettings
from magnetar.autorecovery.worker import ReplicationWorker
from magnetar.cancellation import cancel_and_wait
from magnetar.ledger import BookKeeper, LedgerClientConfig
from magnetar.metadata.factory import open_store
from magnetar.shutdown import STOP_SIGNALS, shutdown_step, stop_event
from magnetar.telemetry import get_logger
from magnetar.telemetry.http_server import HttpServer
from magnetar.telemetry.metrics import Metrics

log = get_logger(__name__)

READY_LINE = "magnetar autorecovery ready"


def _remove_stop_handlers(loop: asyncio.AbstractEventLoop) -> None:
    for sig in STOP_SIGNALS:
        loop.remove_signal_handler(sig)


def ledger_config(settings: AutorecoverySettings) -> LedgerClientConfig:
    timeout = settings.bookie_timeout_s
    return LedgerClientConfig(
        add_timeout_s=timeout,
        read_timeout_s=timeout,
        metadata_timeout_s=timeout,
        bookie_quarantine_s=timeout,
        tls=settings.bookkeeper_tls(),
        auth_token=settings.bookkeeper_client_token(),
    )


async def serve(settings: AutorecoverySettings) -> int:
    """Run until SIGTERM/SIGINT; return the process exit code."""
    loop = asyncio.get_running_loop()
    stop = stop_event()
    timeout = settings.shutdown_step_timeout_s
    me = settings.autorecovery_id
    async with AsyncExitStack() as stack:
        stack.callback(_remove_stop_handlers, loop)
        store = await open_store(
            settings.metadata_url,
            session_timeout_s=settings.session_timeout_s,
            tls=settings.metadata_store_tls(),
        )
        stack.push_async_callback(shutdown_step, "close_metadata", store.close(), timeout)
        bk = await BookKeeper.start(store, ledger_config(settings))
        stack.push_async_callback(shutdown_step, "close_ledger_client", bk.close(), timeout)
        stats = ReplicationStats()
        replicator = LedgerReplicator(
            bk, store, stats, copy_concurrency=settings.rereplication_concurrency
        )
        worker = ReplicationWorker(store, replicator, stats, me, poll_s=settings.replication_poll_s)
        auditor = Auditor(
            store,
            bk,
            me,
            lost_bookie_recovery_delay_s=settings.lost_bookie_recovery_delay,
            audit_period_s=settings.audit_period,
            tick_s=settings.auditor_tick_s,
        )
        metrics = Metrics()
        stack.callback(metrics.shutdown)
        observe_autorecovery(metrics, store, auditor, stats)
        http = AutorecoveryHttpService(store, auditor, stats, metrics)
        http_server = HttpServer(http.routes())
        http_port = await http_server.start(settings.bind_address, settings.http_server_port)
        stack.push_async_callback(shutdown_step, "stop_http", http_server.close(), timeout)
        async with asyncio.TaskGroup() as tg:
            auditing = tg.create_task(auditor.run(), name="autorecovery-auditor")
            replicating = tg.create_task(worker.run(), name="autorecovery-worker")
            http.running = True
            log.info("autorecovery_ready", autorecovery_id=me, http_port=http_port)
            print(f"{READY_LINE} id={me} http_port={http_port}", flush=True)
            await stop.wait()
            log.info("autorecovery_stopping", autorecovery_id=me)
            http.running = False
            await shutdown_step("stop_worker", cancel_and_wait(replicating), timeout)
            await shutdown_step("stop_auditor", cancel_and_wait(auditing), timeout)
    log.info("autorecovery_stopped", autorecovery_id=me)
    return 0
