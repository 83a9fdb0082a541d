"""Every child of a PulsarCluster, by stage, in the order they come up and roll. Pure."""

from __future__ import annotations

import enum

from magnetar_operator.manifests.audit import audit_objects
from magnetar_operator.manifests.bookies import bookie_objects
from magnetar_operator.manifests.brokers import broker_objects
from magnetar_operator.manifests.etcd import etcd_objects
from magnetar_operator.manifests.front import autorecovery_objects, proxy_objects
from magnetar_operator.manifests.init_job import init_job
from magnetar_operator.manifests.pod import Obj
from magnetar_operator.manifests.security import security_objects
from magnetar_operator.spec import ClusterSpec


class Stage(enum.IntEnum):
    SECURITY = 0  # the cert-manager Certificate: applied first, on every pass
    ETCD = 1
    INIT = 2
    BOOKIES = 3
    BROKERS = 4
    FRONT = 5  # proxy and autorecovery
    AUDIT = 6


def cluster_objects(
    spec: ClusterSpec, *, bookie_replicas: int | None = None, bookie_partition: int = 0
) -> dict[Stage, list[Obj]]:
    """The children of each stage; the bookie StatefulSet with ``bookie_replicas`` (default:
    the spec's) and the rolling-update ``bookie_partition``."""
    replicas = spec.bookies.replicas if bookie_replicas is None else bookie_replicas
    return {
        Stage.SECURITY: security_objects(spec),
        Stage.ETCD: etcd_objects(spec),
        Stage.INIT: [init_job(spec)],
        Stage.BOOKIES: bookie_objects(spec, replicas=replicas, partition=bookie_partition),
        Stage.BROKERS: broker_objects(spec),
        Stage.FRONT: proxy_objects(spec) + autorecovery_objects(spec),
        Stage.AUDIT: audit_objects(spec),
    }
