"""Several named local clusters that replicate among themselves (a Pulsar *instance*).

``magnetar cluster up --clusters a,b,c`` runs one ordinary local cluster per name, each in
``DATA_DIR/<name>`` with its own etcd, bookies and brokers (and proxy, autorecovery) and
``clusterName`` = the name, started one after another (so each plans its ports while the
earlier ones hold theirs). ``DATA_DIR/instance.json`` lists the names, so ``status`` and
``down`` (and a restart with ``up``) find them all. Once all are ready, :func:`link_clusters`
registers every cluster in every other one's metadata (``serviceUrl`` = its admin URL,
``brokerServiceUrl`` = its service URL) and lets tenant ``public`` use all of them, through
each cluster's admin REST API: then ``magnetar admin namespaces set-clusters`` is the only step
left before a namespace replicates.

:func:`parse_cluster_names` is pure; the rest is blocking I/O for the ``magnetar cluster``
command's one thread (the admin calls run on a private event loop).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Callable
from pathlib import Path

from magnetar.client.admin import AdminClient
from magnetar.client.admin_errors import AdminError, Conflict
from magnetar.localcluster.errors import BadClusterState, InstanceMismatch, LocalClusterError
from magnetar.localcluster.layout import ClusterLayout
from magnetar.localcluster.probe import probe
from magnetar.localcluster.status import status_line
from magnetar.localcluster.supervisor import (
    RunningCluster,
    load_layout,
    serve_until_signal,
    start_cluster,
    stop_cluster,
    stop_data_dir,
)
from magnetar.naming import DEFAULT_TENANT
from magnetar.policies import ClusterData, TenantInfo

INSTANCE_FILE = "instance.json"
MAX_CLUSTERS = 5
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
_ADMIN_TIMEOUT_S = 10.0
Echo = Callable[[str], None]


def parse_cluster_names(text: str) -> list[str]:
    """``a,b,c`` -> the names; ValueError naming what is wrong (2 to 5 distinct names of
    letters, digits, ``-`` and ``_``, starting with a letter)."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not 2 <= len(names) <= MAX_CLUSTERS:
        raise ValueError(f"--clusters needs 2 to {MAX_CLUSTERS} names, got {len(names)}")
    for name in names:
        if not _NAME.match(name):
            raise ValueError(
                f"cluster name {name!r} is not valid: letters, digits, '-' and '_', "
                "starting with a letter"
            )
    if len(set(names)) != len(names):
        raise ValueError(f"--clusters names a cluster twice: {text}")
    return names


def instance_path(data_dir: Path) -> Path:
    return data_dir / INSTANCE_FILE


def load_instance(data_dir: Path) -> list[str] | None:
    """The cluster names ``data_dir`` holds, or None when it holds no instance."""
    path = instance_path(data_dir)
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except ValueError as exc:
        raise BadClusterState(path, str(exc)) from None
    names = doc.get("clusters") if isinstance(doc, dict) else None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise BadClusterState(path, "'clusters' is not a list of names")
    return names


def _save_instance(data_dir: Path, names: list[str]) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    path = instance_path(data_dir)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"clusters": names}, indent=2) + "\n")
    os.replace(tmp, path)


def start_instance(
    data_dir: Path,
    names: list[str] | None,
    bookies: int | None,
    brokers: int | None,
    ready_timeout_s: float,
    echo: Echo,
    *,
    proxy: bool = False,
    autorecovery: bool = False,
) -> list[RunningCluster]:
    """Start (or restart) the named clusters in ``data_dir``, wait until ready, link them.
    ``names`` None: the stored ones. A stored instance of other names is refused."""
    data_dir = data_dir.resolve()
    stored = load_instance(data_dir)
    if stored is not None and names is not None and stored != names:
        raise InstanceMismatch(data_dir, stored, names)
    wanted = names if names is not None else stored
    if wanted is None:
        raise InstanceMismatch(data_dir, [], [])
    _save_instance(data_dir, wanted)
    started: list[RunningCluster] = []
    try:
        for name in wanted:
            echo(f"cluster {name}:")
            started.append(
                start_cluster(
                    data_dir / name,
                    bookies,
                    brokers,
                    ready_timeout_s,
                    echo,
                    proxy=proxy,
                    autorecovery=autorecovery,
                    cluster_name=name,
                )
            )
        echo("registering the clusters with each other")
        link_clusters([c.layout for c in started])
    except BaseException:
        for cluster in reversed(started):
            stop_cluster(cluster, echo)
        raise
    return started


def link_clusters(layouts: list[ClusterLayout]) -> None:
    """Register every cluster in every other one, and allow tenant ``public`` on all."""
    try:
        asyncio.run(_link(layouts))
    except AdminError as exc:
        raise LocalClusterError(f"registering the clusters with each other failed: {exc}") from exc


async def _link(layouts: list[ClusterLayout]) -> None:
    everyone = frozenset(layout.cluster_name for layout in layouts)
    for layout in layouts:
        async with AdminClient(layout.admin_url, timeout_s=_ADMIN_TIMEOUT_S) as admin:
            for peer in layouts:
                if peer.cluster_name == layout.cluster_name:
                    continue
                data = ClusterData(service_url=peer.admin_url, broker_service_url=peer.service_url)
                try:
                    await admin.create_cluster(peer.cluster_name, data)
                except Conflict:
                    await admin.update_cluster(peer.cluster_name, data)
            tenant = await admin.get_tenant(DEFAULT_TENANT)
            allowed = tenant.allowed_clusters | everyone
            if allowed != tenant.allowed_clusters:
                await admin.update_tenant(DEFAULT_TENANT, TenantInfo(tenant.admin_roles, allowed))


def instance_status_line(clusters: list[RunningCluster]) -> str:
    """One line for all: ``a: <status> | b: <status>``."""
    parts = []
    for cluster in clusters:
        for process in cluster.processes.values():
            process.poll()  # reap a member that died, so that it shows as down
        statuses = [probe(cluster.data_dir, m) for m in cluster.layout.members]
        parts.append(f"{cluster.layout.cluster_name}: {status_line(statuses)}")
    return " | ".join(parts)


def serve_instance_foreground(
    clusters: list[RunningCluster],
    write: Callable[[str, bool], None],
    echo: Echo,
    refresh_s: float,
) -> None:
    """The foreground of several clusters: a status line until SIGINT or SIGTERM, then stop
    them all (the last started first)."""

    def stop_all() -> None:
        for cluster in reversed(clusters):
            echo(f"cluster {cluster.layout.cluster_name}:")
            stop_cluster(cluster, echo)

    serve_until_signal(lambda: instance_status_line(clusters), write, refresh_s, stop_all)


def stop_instance(data_dir: Path, names: list[str], echo: Echo) -> bool:
    """``cluster down`` of an instance; False if none of its clusters was running."""
    stopped = False
    for name in reversed(names):
        cluster_dir = data_dir / name
        if load_layout(cluster_dir) is None:
            continue
        echo(f"cluster {name}:")
        stopped = stop_data_dir(cluster_dir, echo) or stopped
    return stopped
