"""The proxy process: start-up, the ready line and ordered shutdown of ``magnetar proxy``.

Start-up: metadata store -> broker discovery (first listing of ``/loadbalance/brokers``) ->
binary listener -> web service (forwarding, ``/metrics``, health) -> one ready line on stdout.
The proxy keeps no state: every lookup goes to the brokers, every relay dies with its client or
its broker, so several proxies can serve one cluster side by side.
SIGTERM/SIGINT stop it in order, each step under a timeout: the web service, the listener
(closing every client connection and relay), the broker links and the discovery, the HTTP
forwarder, then the metadata store.

Concurrency: one loop, one ``asyncio.TaskGroup`` built here; its long-lived task is the web
server.
"""

from __future__ import annotations

import asyncio

from magnetar.authentication import build_authentication
from magnetar.metadata.errors import StoreUnavailable
from magnetar.metadata.factory import open_store
from magnetar.metadata.store import MetadataStore
from magnetar.proxy.broker_link import BrokerLinks
from magnetar.proxy.connection import ProxyContext
from magnetar.proxy.discovery import BrokerDiscovery
from magnetar.proxy.http_forward import HttpForwarder
from magnetar.proxy.lookup import ProxyLookup
from magnetar.proxy.metrics import observe_proxy
from magnetar.proxy.server import ProxyServer
from magnetar.proxy.settings import ProxySettings
from magnetar.proxy.stats import ProxyStats
from magnetar.proxy.web_app import ProxyWebApp
from magnetar.proxy.web_service import bound_port, build_web_server
from magnetar.shutdown import shutdown_step, stop_event
from magnetar.tasks import TaskSet
from magnetar.telemetry import get_logger
from magnetar.telemetry.metrics import Metrics

log = get_logger(__name__)

READY_LINE = "magnetar proxy ready"


async def serve_proxy(settings: ProxySettings) -> int:
    """Run ``magnetar proxy`` until SIGTERM/SIGINT; the exit code."""
    stop = stop_event()
    timeout = settings.shutdown_step_timeout_s
    store = await open_store(settings.metadata_url, session_timeout_s=settings.session_timeout_s)
    try:
        await run_proxy(settings, store, stop)
    finally:
        await shutdown_step("close_metadata", store.close(), timeout)
    log.info("proxy_stopped")
    return 0


async def run_proxy(settings: ProxySettings, store: MetadataStore, stop: asyncio.Event) -> None:
    """Serve over ``store`` until ``stop`` is set; then close in order."""
    timeout = settings.shutdown_step_timeout_s
    limits = settings.relay_limits()
    stats = ProxyStats()
    metrics = Metrics()
    observe_proxy(metrics, stats)
    discovery = BrokerDiscovery(store)
    credential = settings.broker_credential()
    links = BrokerLinks(limits, credential)
    tasks = TaskSet("proxy")
    ctx = ProxyContext(
        discovery=discovery,
        lookup=ProxyLookup(discovery, links, stats),
        limits=limits,
        stats=stats,
        max_message_size=settings.max_message_size,
        tasks=tasks,
        authentication=(
            build_authentication(settings.authentication_config())
            if settings.authentication_enabled
            else None
        ),
        credential=credential,
        forward_credentials=settings.forward_authorization_credentials,
    )
    server = ProxyServer(ctx, links, settings.bind_address, settings.service_port)
    discovery.on_broker_gone(server.broker_gone)
    forwarder = HttpForwarder(discovery, settings.http_request_timeout_s)
    app = ProxyWebApp(forwarder, discovery, metrics, settings.http_max_request_body_bytes)
    web = build_web_server(app, settings.bind_address, settings.web_service_port)
    try:
        try:
            async with asyncio.timeout(settings.operation_timeout_s):
                await discovery.start()
        except TimeoutError:
            raise StoreUnavailable(
                f"could not list the broker registry at {settings.metadata_url} within "
                f"{settings.operation_timeout_s:g}s; check that etcd answers"
            ) from None
        port = await server.start()
        async with asyncio.TaskGroup() as tg:
            tg.create_task(web.serve(), name="proxy-web")
            async with asyncio.timeout(30):
                # uvicorn offers no readiness event, only this flag.
                while not web.started:  # noqa: ASYNC110
                    await asyncio.sleep(0.02)
            address = settings.advertised_address
            web_port = bound_port(web, settings.web_service_port)
            log.info("proxy_ready", service_port=port, web_port=web_port)
            print(
                f"{READY_LINE} service_url=pulsar://{address}:{port} "
                f"web_service_url=http://{address}:{web_port}",
                flush=True,
            )
            await stop.wait()
            log.info("proxy_stopping")
            web.should_exit = True
    finally:
        web.should_exit = True
        await shutdown_step("stop_listener", server.close(timeout), timeout)
        await shutdown_step("close_broker_links", links.close(), timeout)
        await shutdown_step("stop_discovery", discovery.close(), timeout)
        await shutdown_step("close_tasks", tasks.close(), timeout)
        await shutdown_step("close_http_forwarder", forwarder.close(), timeout)
        metrics.shutdown()
