"""A local cluster on loopback: etcd, bookies, brokers (and a proxy), each its own OS process.

A composition above the services, beside :mod:`magnetar.standalone` in the layers: it runs
``etcd``, ``magnetar bookie`` and ``magnetar broker`` as child processes through their command
lines and never imports a service. :mod:`.layout` (members, ports, ``cluster.json``),
:mod:`.command` (each member's command line) and :mod:`.status` (health counts and text) are
pure, as are :mod:`.owners` and :mod:`.audit` (bundle owners and under-replicated ledgers from
metadata keys); :mod:`.ports`, :mod:`.probe` and :mod:`.supervisor` do the I/O, and
:mod:`.cluster_metadata` reads the cluster's metadata store (through :mod:`magnetar.metadata`,
one session for both). :mod:`.instance` runs several named clusters that replicate among
themselves (``--clusters a,b,c``) and registers them with each other through their admin REST
APIs. Called by ``magnetar cluster`` (:mod:`magnetar.cli.cluster_cmd`) only.
"""

from magnetar.localcluster.cluster_metadata import ClusterMetadata, read_cluster_metadata
from magnetar.localcluster.errors import LocalClusterError
from magnetar.localcluster.instance import (
    instance_status_line,
    load_instance,
    parse_cluster_names,
    serve_instance_foreground,
    start_instance,
    stop_instance,
)
from magnetar.localcluster.layout import ClusterLayout, Member, Role
from magnetar.localcluster.owners import BundleOwner
from magnetar.localcluster.status import (
    Health,
    MemberStatus,
    all_up,
    owners_table,
    status_line,
    status_table,
    under_replicated_table,
    urls_text,
)
from magnetar.localcluster.supervisor import (
    RunningCluster,
    cluster_status,
    serve_foreground,
    sigterm_interrupts,
    start_cluster,
    stop_data_dir,
)

__all__ = [
    "BundleOwner",
    "ClusterLayout",
    "ClusterMetadata",
    "Health",
    "LocalClusterError",
    "Member",
    "MemberStatus",
    "Role",
    "RunningCluster",
    "all_up",
    "cluster_status",
    "instance_status_line",
    "load_instance",
    "owners_table",
    "parse_cluster_names",
    "read_cluster_metadata",
    "serve_foreground",
    "serve_instance_foreground",
    "sigterm_interrupts",
    "start_cluster",
    "start_instance",
    "status_line",
    "status_table",
    "stop_data_dir",
    "stop_instance",
    "under_replicated_table",
    "urls_text",
]
