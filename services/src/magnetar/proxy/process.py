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
import ssl
from dataclasses import dataclass

from magnetar.metadata.errors import StoreUnavailable
from magnetar.metadata.factory import open_store
from magnetar.metadata.store import MetadataStore
from magnetar.proxy.broker_dial import BrokerDial, broker_client_context
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
from magnetar.tls import ServerTls, TlsConfigError

log = get_logger(__name__)

READY_LINE = "magnetar proxy ready"


def server_tls(settings: ProxySettings) -> ServerTls | None:
    """The TLS of the proxy's client-facing TLS ports, None without any."""
    port_tls = settings.effective_service_port_tls
    if port_tls is None and settings.web_service_port_tls is None:
        return None
    asking = "service_port_tls" if port_tls is not None else "web_service_port_tls"
    return ServerTls(settings.server_tls_config(asking))


def broker_tls(settings: ProxySettings) -> ssl.SSLContext | None:
    """The client context towards brokers with ``tls_enabled_with_broker``, else None."""
    if not settings.tls_enabled_with_broker:
        return None
    try:
        return broker_client_context(
            settings.broker_client_trust_certs_file_path,
            settings.broker_client_certificate_file_path,
            settings.broker_client_key_file_path,
            settings.tls_hostname_verification_enabled,
        )
    except (OSError, ssl.SSLError) as exc:
        raise TlsConfigError(
            f"cannot load the proxy's TLS files for brokers (broker_client_*_file_path): {exc}"
        ) from exc


async def serve_proxy(settings: ProxySettings) -> int:
    """Run ``magnetar proxy`` until SIGTERM/SIGINT; the exit code."""
    tls = ProxyTls(server_tls(settings), broker_tls(settings))  # bad files: refused at once
    stop = stop_event()
    timeout = settings.shutdown_step_timeout_s
    store = await open_store(
        settings.metadata_url,
        session_timeout_s=settings.session_timeout_s,
        tls=settings.metadata_store_tls(),
    )
    try:
        await run_proxy(settings, store, stop, tls)
    finally:
        await shutdown_step("close_metadata", store.close(), timeout)
    log.info("proxy_stopped")
    return 0


@dataclass(frozen=True)
class ProxyTls:
    """The proxy's TLS towards clients (None: no TLS port) and towards brokers (None: plain)."""

    server: ServerTls | None = None
    brokers: ssl.SSLContext | None = None


async def run_proxy(
    settings: ProxySettings,
    store: MetadataStore,
    stop: asyncio.Event,
    tls: ProxyTls | None = None,
) -> None:
    """Serve over ``store`` until ``stop`` is set; then close in order. ``tls``: built from
    the settings when not given."""
    if tls is None:
        tls = ProxyTls(server_tls(settings), broker_tls(settings))
    timeout = settings.shutdown_step_timeout_s
    limits = settings.relay_limits()
    stats = ProxyStats()
    metrics = Metrics()
    observe_proxy(metrics, stats)
    discovery = BrokerDiscovery(store)
    dial = BrokerDial(discovery, tls.brokers)
    links = BrokerLinks(limits, dial)
    tasks = TaskSet("proxy")
    ctx = ProxyContext(
        discovery=discovery,
        lookup=ProxyLookup(discovery, links, stats),
        limits=limits,
        stats=stats,
        max_message_size=settings.max_message_size,
        tasks=tasks,
        dial=dial,
    )
    port_tls = settings.effective_service_port_tls
    server = ProxyServer(ctx, links, settings.bind_address, settings.service_port)
    servers = [server]
    if tls.server is not None and port_tls is not None:
        servers.append(ProxyServer(ctx, links, settings.bind_address, port_tls, tls.server))
    discovery.on_broker_gone(server.broker_gone)  # the context's relays, those of both ports
    forwarder = HttpForwarder(discovery, settings.http_request_timeout_s, dial.context)
    app = ProxyWebApp(forwarder, discovery, metrics, settings.http_max_request_body_bytes)
    web = build_web_server(app, settings.bind_address, settings.web_service_port)
    webs = [web]
    if settings.web_service_port_tls is not None:
        webs.append(
            build_web_server(app, settings.bind_address, settings.web_service_port_tls, tls.server)
        )
    try:
        try:
            async with asyncio.timeout(settings.operation_timeout_s):
                await discovery.start()
        except TimeoutError:
            raise StoreUnavailable(
                f"could not list the broker registry at {settings.metadata_url} within "
                f"{settings.operation_timeout_s:g}s; check that etcd answers"
            ) from None
        ports = [await listener.start() for listener in servers]
        async with asyncio.TaskGroup() as tg:
            for one in webs:
                tg.create_task(one.serve(), name="proxy-web")
            async with asyncio.timeout(30):
                # uvicorn offers no readiness event, only this flag.
                while not all(one.started for one in webs):  # noqa: ASYNC110
                    await asyncio.sleep(0.02)
            address = settings.advertised_address
            web_ports = [bound_port(one, settings.web_service_port) for one in webs]
            log.info("proxy_ready", service_port=ports[0], web_port=web_ports[0])
            line = (
                f"{READY_LINE} service_url=pulsar://{address}:{ports[0]} "
                f"web_service_url=http://{address}:{web_ports[0]}"
            )
            if len(ports) > 1:
                line += f" service_url_tls=pulsar+ssl://{address}:{ports[1]}"
            if len(web_ports) > 1:
                line += f" web_service_url_tls=https://{address}:{web_ports[1]}"
            print(line, flush=True)
            await stop.wait()
            log.info("proxy_stopping")
            for one in webs:
                one.should_exit = True
    finally:
        for one in webs:
            one.should_exit = True
        for listener in reversed(servers):
            await shutdown_step("stop_listener", listener.close(timeout), timeout)
        await shutdown_step("close_broker_links", links.close(), timeout)
        await shutdown_step("stop_discovery", discovery.close(), timeout)
        await shutdown_step("close_tasks", tasks.close(), timeout)
        await shutdown_step("close_http_forwarder", forwarder.close(), timeout)
        metrics.shutdown()
