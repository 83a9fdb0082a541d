"""The broker process: start-up, the ready line and ordered shutdown of ``magnetar broker``.

Start-up: ManagedLedgerFactory -> BrokerService -> binary protocol listener -> admin web
service (the app the command line passes in) -> one ready line on stdout; a cluster member
registers in the broker registry just before it binds (a twin address is refused there). On
first start it creates the cluster, tenant ``public`` and namespace ``public/default``.
A cluster member also runs the load manager (:mod:`.load_manager`: leader election, placement,
shedding) and the load reporter (:mod:`.load_reporter`), started once registered, and the
automatic bundle split (:mod:`.bundle_splitter`).
SIGTERM/SIGINT stop it in order, each step under a timeout: (cluster) stop splitting, stop the
load reporter, resign the load manager's leadership and unregister, then unload every owned
bundle while the listeners still answer lookups (clients move to other brokers), close the
listeners (each connection first finishes: every SEND it took is answered, see
:meth:`~magnetar.broker.server.BrokerServer.close`), stop the web service, close topics
(managed ledgers: still open while the connections finish, for their adds in flight), the
factory, then the BookKeeper client and the metadata store.

``magnetar broker`` runs as a cluster member (:class:`~magnetar.broker.ownership.BundleOwnership`
over the registry); the standalone passes ``cluster=False`` and owns every bundle.

:func:`run_broker` serves over a metadata store and a BookKeeper client it is given, so that a
composition above the broker (:mod:`magnetar.standalone`) can bring its own; it and
:func:`tune_interpreter` are that composition's building blocks (the shutdown steps and the
stop event come from :mod:`magnetar.shutdown`). It reaches bookies only through the BookKeeper
client, never imports one.

Concurrency: one loop, one ``asyncio.TaskGroup`` built here; its long-lived task is the web
server.
"""

from __future__ import annotations

import asyncio
import gc
import sys
from dataclasses import dataclass

from magnetar.broker.broker_registry import BrokerAlreadyRegistered, BrokerRegistry
from magnetar.broker.bundle_factory import NamespaceBundleFactory
from magnetar.broker.bundle_splitter import BundleSplitter
from magnetar.broker.cluster_init import initialize_cluster
from magnetar.broker.load_manager import BundlePlacement, LoadManager
from magnetar.broker.load_reporter import LoadReporter
from magnetar.broker.ownership import BundleOwnership, BundleTopics, Ownership
from magnetar.broker.replication import RemoteClusters
from magnetar.broker.resources import BrokerResources
from magnetar.broker.server import BrokerServer
from magnetar.broker.service import BrokerService, OwnershipFactory, broker_lookup_data
from magnetar.broker.settings import BrokerSettings
from magnetar.broker.switch_interval import SwitchIntervalPolicy, follow_load
from magnetar.broker.web_service import AppFactory, WebServer, build_web_server
from magnetar.ledger.client import BookKeeper
from magnetar.ledger.config import LedgerClientConfig
from magnetar.managed_ledger import ManagedLedgerFactory
from magnetar.metadata.factory import open_store
from magnetar.metadata.store import MetadataStore
from magnetar.policies import ClusterData
from magnetar.shutdown import shutdown_step, stop_event
from magnetar.telemetry import get_logger
from magnetar.tls import ServerTls

log = get_logger(__name__)

READY_LINE = "magnetar broker ready"


async def create_defaults(service: BrokerService) -> None:
    """Cluster, tenant ``public`` and namespace ``public/default`` (first start only)."""
    await initialize_cluster(
        service.resources,
        service.config.cluster_name,
        ClusterData(
            service_url=service.web_service_url,
            service_url_tls=service.lookup_data.web_service_url_tls or None,
            broker_service_url=service.broker_service_url,
            broker_service_url_tls=service.broker_service_url_tls or None,
        ),
    )


def cluster_ownership(
    store: MetadataStore, registry: BrokerRegistry, placement: BundlePlacement | None = None
) -> OwnershipFactory:
    def build(topics: BundleTopics, factory: NamespaceBundleFactory) -> Ownership:
        return BundleOwnership(store, registry, topics, factory, placement)

    return build


@dataclass(frozen=True, slots=True)
class ClusterMember:
    """A cluster member's registration, load manager, load reporter and bundle splitter."""

    registry: BrokerRegistry
    load_manager: LoadManager
    reporter: LoadReporter
    splitter: BundleSplitter

    async def join(self) -> None:
        await self.registry.register()  # a twin is refused here
        self.load_manager.start()
        self.reporter.start()
        self.splitter.start()  # its first pass comes one split interval later

    async def leave(self) -> None:
        """Stop reporting, resign the leadership, unregister (idempotent)."""
        await self.reporter.close()
        await self.load_manager.close()
        await self.registry.unregister()


def cluster_member(
    settings: BrokerSettings,
    store: MetadataStore,
    registry: BrokerRegistry,
    load_manager: LoadManager,
    service: BrokerService,
) -> ClusterMember:
    ownership = service.ownership
    assert isinstance(ownership, BundleOwnership)  # built by cluster_ownership
    window_s = service.config.stats_window_s
    reporter = LoadReporter(
        store,
        registry,
        ownership,
        service,
        interval_s=settings.load_balancer_report_update_interval_s,
        window_s=window_s,
    )
    splitter = BundleSplitter(
        ownership,
        lambda: list(service.topics.values()),
        settings.bundle_split_config(),
        unload_split_bundles=settings.load_balancer_auto_unload_split_bundles_enabled,
        window_s=window_s,
    )
    return ClusterMember(registry, load_manager, reporter, splitter)


async def run_broker(
    settings: BrokerSettings,
    store: MetadataStore,
    bk: BookKeeper,
    stop: asyncio.Event,
    app_factory: AppFactory | None = None,
    *,
    cluster: bool = False,
    remotes: RemoteClusters | None = None,
    tls: ServerTls | None = None,
) -> None:
    """Serve the broker over ``store`` and ``bk`` until ``stop`` is set; then close it in order.

    With ``cluster`` the broker registers itself and owns only the bundles it acquires.
    ``tls``: the TLS ports' certificate (:func:`server_tls`, built by the caller before it
    opens anything, so that a bad file ends the start at once); built here when not given.
    ``remotes`` (the command line's, on ``magnetar.client``) lets its topics replicate to other
    clusters; it is closed after the topics."""
    timeout = settings.shutdown_step_timeout_s
    config = settings.broker_config()
    factory = ManagedLedgerFactory(store, bk)
    registry: BrokerRegistry | None = None
    load_manager: LoadManager | None = None
    ownership: OwnershipFactory | None = None
    if cluster:
        # A crashed predecessor's key lives until its lease expires: wait that long, no more.
        wait_s = settings.session_timeout_s + 2.0
        registry = BrokerRegistry(store, broker_lookup_data(config), wait_s=wait_s)
        load_manager = LoadManager(store, registry.data, settings.load_manager_config())
        ownership = cluster_ownership(store, registry, load_manager)
    service = BrokerService(store, factory, config, BrokerResources(store), ownership, remotes)
    member = (
        None
        if registry is None or load_manager is None
        else cluster_member(settings, store, registry, load_manager, service)
    )
    await create_defaults(service)
    if tls is None:
        tls = server_tls(settings)  # TlsConfigError (a file that does not load): refuse to start
    server = BrokerServer(service, settings.bind_address, settings.broker_port)
    tls_server = (
        None
        if tls is None or settings.broker_service_port_tls is None
        else BrokerServer(service, settings.bind_address, settings.broker_service_port_tls, tls)
    )
    webs: list[WebServer] = []
    governor = switch_interval_governor(settings)
    try:
        if member is not None:  # before binding: a twin is refused by address, not by port
            await member.join()
        port = await server.start()
        if tls_server is not None:
            await tls_server.start()
        async with asyncio.TaskGroup() as tg:
            if app_factory is not None:
                app = app_factory(service)
                webs.append(build_web_server(app, settings.bind_address, settings.web_port))
                if settings.web_service_port_tls is not None:
                    webs.append(
                        build_web_server(
                            app, settings.bind_address, settings.web_service_port_tls, tls
                        )
                    )
                for web in webs:
                    tg.create_task(web.serve(), name="admin-web")
                async with asyncio.timeout(30):
                    # uvicorn offers no readiness event, only this flag.
                    while not all(web.started for web in webs):  # noqa: ASYNC110
                        await asyncio.sleep(0.02)
            freeze_startup_objects()
            log.info("broker_ready", broker_port=port, web_port=settings.web_port)
            tls_port = None if tls_server is None else tls_server.port
            print(ready_line(settings, port, tls_port), flush=True)
            await stop.wait()
            log.info("broker_stopping")
            await hand_over(member, service, timeout)
            # Before the web server: its shutdown (uvicorn's) otherwise waits behind the
            # producers' traffic, 0.3-1.2 s under load (docs/benchmarks.md, "Issue 17: a stop
            # under load").
            await close_listeners(server, tls_server, timeout)
            for web in webs:
                web.should_exit = True
    finally:
        if governor is not None:
            governor.cancel()
            await asyncio.wait([governor])
        await hand_over(member, service, timeout)
        await close_listeners(server, tls_server, timeout)  # idempotent
        await shutdown_step("close_topics", service.close(), timeout * 3)
        if remotes is not None:
            await shutdown_step("close_remote_clusters", remotes.close(), timeout)
        await shutdown_step("close_factory", factory.close(), timeout)


async def close_listeners(
    server: BrokerServer, tls_server: BrokerServer | None, step_timeout_s: float
) -> None:
    """Stop accepting clients and close their connections (each listener once)."""
    if tls_server is not None:
        await shutdown_step("stop_tls_listener", tls_server.close(step_timeout_s), step_timeout_s)
    await shutdown_step("stop_listener", server.close(step_timeout_s), step_timeout_s)


def server_tls(settings: BrokerSettings) -> ServerTls | None:
    """The TLS of the broker's TLS ports (one certificate for both), None without any."""
    if settings.broker_service_port_tls is None and settings.web_service_port_tls is None:
        return None
    asking = (
        "broker_service_port_tls"
        if settings.broker_service_port_tls is not None
        else "web_service_port_tls"
    )
    return ServerTls(settings.server_tls_config(asking))


def ready_line(settings: BrokerSettings, port: int, tls_port: int | None = None) -> str:
    """The line on stdout that says the broker serves, with its URLs (TLS ones when set;
    ``port`` and ``tls_port`` are the bound ones)."""
    host = settings.advertised_address
    line = (
        f"{READY_LINE} service_url=pulsar://{host}:{port} "
        f"web_service_url=http://{host}:{settings.web_port}"
    )
    if tls_port is not None:
        line += f" service_url_tls=pulsar+ssl://{host}:{tls_port}"
    if settings.web_service_port_tls is not None:
        line += f" web_service_url_tls=https://{host}:{settings.web_service_port_tls}"
    return line


async def hand_over(
    member: ClusterMember | None, service: BrokerService, step_timeout_s: float
) -> None:
    """Stop splitting, leave the cluster (load reporter, load manager, registry), then unload
    every owned bundle (idempotent)."""
    if member is not None:
        await shutdown_step("stop_bundle_splitter", member.splitter.close(), step_timeout_s)
        await shutdown_step("unregister_broker", member.leave(), step_timeout_s)
    await shutdown_step("unload_bundles", service.ownership.close(), step_timeout_s * 3)


def tune_interpreter(settings: BrokerSettings) -> None:
    """CPython settings for a broker process (measurements in docs/benchmarks.md):

    - Fewer cyclic-GC passes: with thousands of messages in flight the default thresholds ran
      a collection every few hundred messages. ``gc_gen0_threshold`` trades throughput for
      the length of a youngest-generation pass, which grows with the objects it holds.
      Objects that exist once start-up is done (modules, settings) are frozen out of the
      collector's view; :func:`freeze_startup_objects` does the same for the broker's own.
    - A short GIL switch interval (``gil_switch_interval_ms``): the journal thread returns
      from each write and fdatasync needing the GIL while the event loop is busy, and by
      default waits up to 5 ms for it at each of those points, on every acknowledgement's
      path. Under a heavy load :func:`switch_interval_governor` raises it."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(settings.gc_gen0_threshold, 50, 100)
    sys.setswitchinterval(settings.gil_switch_interval_ms / 1000)


def switch_interval_governor(settings: BrokerSettings) -> asyncio.Task[None] | None:
    """The task that sets the GIL switch interval by load (:mod:`.switch_interval`), or None
    when the light and busy intervals are the same (then :func:`tune_interpreter`'s stays)."""
    policy = SwitchIntervalPolicy(
        settings.gil_switch_interval_ms / 1000,
        settings.gil_switch_interval_busy_ms / 1000,
        settings.gil_switch_busy_cpu,
    )
    if not policy.enabled:
        return None
    return asyncio.create_task(follow_load(policy), name="gil-switch-interval")


def freeze_startup_objects() -> None:
    """Once the broker serves: move what start-up built (routes, schemas, the default tenant
    and namespace) to the permanent generation, out of every later full collection."""
    gc.collect()
    gc.freeze()


async def serve_broker(
    settings: BrokerSettings,
    app_factory: AppFactory | None = None,
    remotes: RemoteClusters | None = None,
) -> int:
    """Run ``magnetar broker`` against external metadata and bookies."""
    tune_interpreter(settings)
    tls = server_tls(settings)  # a bad TLS file ends the start before anything is opened
    stop = stop_event()
    timeout = settings.shutdown_step_timeout_s
    store = await open_store(
        settings.metadata_url,
        session_timeout_s=settings.session_timeout_s,
        tls=settings.metadata_store_tls(),
    )
    try:
        bk = await BookKeeper.start(
            store,
            LedgerClientConfig(
                tls=settings.bookkeeper_tls(), auth_token=settings.bookkeeper_client_token()
            ),
        )
        try:
            await run_broker(
                settings, store, bk, stop, app_factory, cluster=True, tls=tls, remotes=remotes
            )
        except BrokerAlreadyRegistered as exc:
            log.error("broker_refused", error=str(exc))
            print(f"magnetar broker: {exc}", file=sys.stderr, flush=True)
            return 1
        finally:
            await shutdown_step("close_bookkeeper", bk.close(), timeout)
    finally:
        await shutdown_step("close_metadata", store.close(), timeout)
    log.info("broker_stopped")
    return 0
