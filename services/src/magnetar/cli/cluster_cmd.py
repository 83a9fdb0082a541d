"""``magnetar cluster up|status|down``: a local cluster of etcd, bookies and brokers on loopback.

Wiring only: the options are parsed here and handed to :mod:`magnetar.localcluster`, which
starts, watches and stops the processes and keeps the cluster's state in ``DATA_DIR/cluster.json``
(so ``status`` and ``down`` work from another shell). A refusal or failure prints
``magnetar cluster <verb>: <reason>`` on stderr and exits 1 (2 for an option that cannot be
honoured); ``status`` exits 1 when a member is not healthy.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

cluster = typer.Typer(
    help=(
        "A local cluster on loopback: etcd, bookies, brokers and optionally a proxy, each its "
        "own process."
    ),
    no_args_is_help=True,
)

DataDirOpt = Annotated[
    Path,
    typer.Option(
        "--data-dir", help="The cluster's state, data and logs (DATA_DIR/cluster.json, logs/)."
    ),
]
DEFAULT_DATA_DIR = Path("cluster-data")
EXIT_FAILED = 1
EXIT_BAD_OPTION = 2


def _echo(line: str) -> None:
    typer.echo(line)


def _fail(verb: str, exc: Exception, code: int = EXIT_FAILED) -> typer.Exit:
    typer.echo(f"magnetar cluster {verb}: {exc}", err=True)
    return typer.Exit(code)


@cluster.command("up")
def up(
    data_dir: DataDirOpt = DEFAULT_DATA_DIR,
    bookies: Annotated[
        int | None, typer.Option(min=1, help="Bookies (default 3; a restart keeps the stored).")
    ] = None,
    brokers: Annotated[
        int | None, typer.Option(min=1, help="Brokers (default 2; a restart keeps the stored).")
    ] = None,
    proxy: Annotated[
        bool,
        typer.Option(
            "--proxy",
            help="Run a proxy in front of the brokers; the URLs printed first are its own.",
        ),
    ] = False,
    autorecovery: Annotated[
        bool,
        typer.Option(
            "--autorecovery",
            help="Also run autorecovery (auditor + re-replication); a restart keeps it.",
        ),
    ] = False,
    detach: Annotated[
        bool, typer.Option("--detach", help="Return once ready; stop with `cluster down`.")
    ] = False,
    ready_timeout: Annotated[
        float, typer.Option(min=1, help="Seconds each role may take to get ready.")
    ] = 120.0,
    clusters: Annotated[
        str | None,
        typer.Option(
            help="Named clusters for geo-replication, e.g. 'a,b,c': one cluster per name in "
            "DATA_DIR/<name>, registered with each other (see docs/geo-replication.md).",
        ),
    ] = None,
) -> None:
    """Start a local cluster and wait until every member is ready.

    Runs etcd, the bookies and the brokers (with --proxy a proxy, with --autorecovery an
    autorecovery process), each its own process logging to DATA_DIR/logs, prints the service,
    admin and metadata URLs (the proxy's when there is one), then shows a status line until
    Ctrl-C or SIGTERM, which stop the proxy, autorecovery, the brokers, the bookies and etcd in
    that order. With --detach it
    returns instead. On an existing DATA_DIR it restarts the same cluster, on the same ports
    and with the same data.

    --clusters a,b[,c]: one such cluster per name (geo-replication), registered with each other.
    """
    from magnetar.localcluster import (
        LocalClusterError,
        load_instance,
        serve_foreground,
        sigterm_interrupts,
        start_cluster,
        urls_text,
    )

    try:
        stored_instance = load_instance(data_dir.resolve())
    except LocalClusterError as exc:
        raise _fail("up", exc) from None
    if clusters is not None or stored_instance is not None:
        _up_instance(
            data_dir, clusters, bookies, brokers, proxy, autorecovery, detach, ready_timeout
        )
        return

    try:
        with sigterm_interrupts():
            running = start_cluster(
                data_dir,
                bookies,
                brokers,
                ready_timeout,
                _echo,
                proxy=proxy,
                autorecovery=autorecovery,
            )
    except LocalClusterError as exc:
        raise _fail("up", exc) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    layout = running.layout
    typer.echo(f"cluster {layout.cluster_name} ready in {running.data_dir}")
    for line in urls_text(layout):
        typer.echo(line)
    if detach:
        typer.echo(f"stop it with: magnetar cluster down --data-dir {running.data_dir}")
        return
    serve_foreground(running, *_status_line(), refresh_s=2.0)
    typer.echo("cluster stopped")


def _status_line() -> tuple[Callable[[str, bool], None], Callable[[str], None]]:
    """The foreground status line's two writers: ``write(line, changed)`` redraws it in place
    on a terminal (elsewhere prints it when it changed); ``echo_after_line`` prints a message
    below it."""
    tty = sys.stdout.isatty()

    def write(line: str, changed: bool) -> None:
        if tty:
            sys.stdout.write(f"\r\033[K{line}")
            sys.stdout.flush()
        elif changed:
            typer.echo(line)

    def echo_after_line(line: str) -> None:
        typer.echo(f"\n{line}" if tty else line)

    return write, echo_after_line


def _up_instance(
    data_dir: Path,
    clusters: str | None,
    bookies: int | None,
    brokers: int | None,
    proxy: bool,
    autorecovery: bool,
    detach: bool,
    ready_timeout: float,
) -> None:
    """``up`` of several named clusters (``--clusters``, or the ones DATA_DIR holds)."""
    from magnetar.localcluster import (
        LocalClusterError,
        parse_cluster_names,
        serve_instance_foreground,
        sigterm_interrupts,
        start_instance,
        urls_text,
    )

    try:
        names = None if clusters is None else parse_cluster_names(clusters)
    except ValueError as exc:
        raise _fail("up", exc, EXIT_BAD_OPTION) from None
    try:
        with sigterm_interrupts():
            running = start_instance(
                data_dir,
                names,
                bookies,
                brokers,
                ready_timeout,
                _echo,
                proxy=proxy,
                autorecovery=autorecovery,
            )
    except LocalClusterError as exc:
        raise _fail("up", exc) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    for one in running:
        typer.echo(f"cluster {one.layout.cluster_name} ready in {one.data_dir}")
        for line in urls_text(one.layout):
            typer.echo(f"  {line}")
    listed = ",".join(one.layout.cluster_name for one in running)
    typer.echo("replicate a namespace (each cluster keeps its own policies: set it on each):")
    for one in running:
        typer.echo(
            f"  magnetar admin --admin-url {one.layout.admin_url} "
            f"namespaces set-clusters public/default --clusters {listed}"
        )
    if detach:
        typer.echo(f"stop them with: magnetar cluster down --data-dir {data_dir}")
        return
    serve_instance_foreground(running, *_status_line(), refresh_s=2.0)
    typer.echo("clusters stopped")


@cluster.command("status")
def status(data_dir: DataDirOpt = DEFAULT_DATA_DIR) -> None:
    """Show each member's pid, ports and health, the bundle owners and the under-replicated
    ledgers (of each named cluster, for --clusters); exit 1 if any member is not healthy."""
    from magnetar.localcluster import LocalClusterError, load_instance

    try:
        names = load_instance(data_dir.resolve())
    except LocalClusterError as exc:
        raise _fail("status", exc) from None
    dirs = [data_dir] if names is None else [data_dir / name for name in names]
    healthy = [_status_of(one) for one in dirs]
    if not all(healthy):
        raise typer.Exit(EXIT_FAILED)


def _status_of(data_dir: Path) -> bool:
    """Print the status of the cluster in ``data_dir``; whether every member is healthy."""
    from magnetar.localcluster import (
        LocalClusterError,
        Role,
        all_up,
        cluster_status,
        owners_table,
        read_cluster_metadata,
        status_line,
        status_table,
        under_replicated_table,
    )

    try:
        layout, statuses = cluster_status(data_dir.resolve())
    except LocalClusterError as exc:
        raise _fail("status", exc) from None
    typer.echo(f"cluster {layout.cluster_name}: {status_line(statuses)}")
    typer.echo(
        f"service URL {layout.service_url}  admin URL {layout.admin_url}  "
        f"metadata URL {layout.metadata_url}"
    )
    for row in status_table(statuses):
        typer.echo(row)
    etcd_up = any(s.up for s in statuses if s.member.role is Role.ETCD)
    read = read_cluster_metadata(layout.metadata_url) if etcd_up else None
    for row in owners_table(None if read is None else read.owners):
        typer.echo(row)
    for row in under_replicated_table(None if read is None else read.under_replicated):
        typer.echo(row)
    if read is not None:
        typer.echo(f"ledgers marked for re-replication (autorecovery): {read.marked}")
    return all_up(statuses)


@cluster.command("down")
def down(data_dir: DataDirOpt = DEFAULT_DATA_DIR) -> None:
    """Stop the cluster DATA_DIR holds (every named one, for --clusters): brokers, then
    bookies, then etcd."""
    from magnetar.localcluster import LocalClusterError, load_instance, stop_data_dir, stop_instance

    try:
        names = load_instance(data_dir.resolve())
        if names is None:
            stopped = stop_data_dir(data_dir, _echo)
        else:
            stopped = stop_instance(data_dir.resolve(), names, _echo)
    except LocalClusterError as exc:
        raise _fail("down", exc) from None
    typer.echo("cluster stopped" if stopped else f"the cluster in {data_dir} was not running")


@cluster.command("init")
def init(
    metadata: Annotated[
        str, typer.Option(help="Metadata URL of the cluster: etcd://host:port[,...].")
    ],
    cluster_name: Annotated[str, typer.Option("--cluster", help="The cluster's name.")],
    web_url: Annotated[
        str, typer.Option(help="The cluster's admin URL, e.g. http://brokers:8080.")
    ],
    service_url: Annotated[
        str, typer.Option(help="The cluster's binary URL, e.g. pulsar://brokers:6650.")
    ],
    timeout: Annotated[float, typer.Option(min=1, help="Seconds to wait for the store.")] = 60.0,
    web_url_tls: Annotated[
        str | None, typer.Option(help="The cluster's HTTPS admin URL, e.g. https://brokers:8443.")
    ] = None,
    service_url_tls: Annotated[
        str | None,
        typer.Option(help="The cluster's TLS binary URL, e.g. pulsar+ssl://brokers:6651."),
    ] = None,
    metadata_store_tls_trust_certs_file_path: Annotated[
        str | None, typer.Option(help="TLS to etcd: the CA of etcd's certificate.")
    ] = None,
    metadata_store_tls_certificate_file_path: Annotated[
        str | None, typer.Option(help="TLS to etcd: the client certificate, if etcd asks.")
    ] = None,
    metadata_store_tls_key_file_path: Annotated[
        str | None, typer.Option(help="TLS to etcd: the client certificate's key.")
    ] = None,
) -> None:
    """Create the cluster's metadata if missing: the cluster, tenant public, public/default.

    Idempotent: what exists is left as it is, so it may run again (the Kubernetes operator's
    init Job runs it once per cluster; brokers also create the same records at start-up).
    Exits 1 when the metadata store cannot be reached within --timeout.
    """
    import asyncio

    from magnetar.broker.cluster_init import initialize_cluster
    from magnetar.broker.resources import BrokerResources
    from magnetar.errors import MagnetarError
    from magnetar.metadata.factory import open_store
    from magnetar.policies import ClusterData
    from magnetar.tls.settings import MetadataStoreTlsSettings

    data = ClusterData(
        service_url=web_url,
        service_url_tls=web_url_tls,
        broker_service_url=service_url,
        broker_service_url_tls=service_url_tls,
    )
    etcd_tls = MetadataStoreTlsSettings(
        metadata_store_tls_trust_certs_file_path=metadata_store_tls_trust_certs_file_path or "",
        metadata_store_tls_certificate_file_path=metadata_store_tls_certificate_file_path or "",
        metadata_store_tls_key_file_path=metadata_store_tls_key_file_path or "",
    )

    async def run() -> list[str]:
        async with asyncio.timeout(timeout):
            store = await open_store(metadata, tls=etcd_tls.metadata_store_tls())
            try:
                done = await initialize_cluster(BrokerResources(store), cluster_name, data)
            finally:
                await store.close()
        return [
            f"{what} {'created' if made else 'exists'}"
            for what, made in (
                (f"cluster {cluster_name}", done.cluster),
                ("tenant public", done.tenant),
                ("namespace public/default", done.namespace),
            )
        ]

    try:
        lines = asyncio.run(run())
    except TimeoutError:
        raise _fail("init", TimeoutError(f"no answer from {metadata} within {timeout}s")) from None
    except (MagnetarError, OSError, ValueError) as exc:
        raise _fail("init", exc) from None
    for line in lines:
        typer.echo(line)
