"""Pure manifest builders: a :class:`~magnetar_operator.spec.ClusterSpec` in, Kubernetes
object dicts out, one module per role. :func:`cluster_objects` lists them all by stage, in the
order the operator brings them up (etcd, init, bookies, brokers, proxy and autorecovery,
audit). No I/O; tests validate every object with ``kubernetes-validate --strict``.
"""

from magnetar_operator.manifests.audit import audit_args, audit_objects
from magnetar_operator.manifests.bookies import bookie_objects, bookie_statefulset
from magnetar_operator.manifests.brokers import broker_config, broker_objects
from magnetar_operator.manifests.etcd import etcd_objects
from magnetar_operator.manifests.front import autorecovery_objects, proxy_objects
from magnetar_operator.manifests.init_job import init_job
from magnetar_operator.manifests.pod import Obj, spec_hash
from magnetar_operator.manifests.stages import Stage, cluster_objects

__all__ = [
    "Obj",
    "Stage",
    "audit_args",
    "audit_objects",
    "autorecovery_objects",
    "bookie_objects",
    "bookie_statefulset",
    "broker_config",
    "broker_objects",
    "cluster_objects",
    "etcd_objects",
    "init_job",
    "proxy_objects",
    "spec_hash",
]
