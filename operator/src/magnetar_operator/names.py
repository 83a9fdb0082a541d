"""Names, labels, DNS names and URLs of a PulsarCluster's children (one place for each).

Every child is named ``<cluster>-<component>`` in the PulsarCluster's namespace; pods of a
StatefulSet are addressable as ``<pod>.<headless service>.<namespace>.svc``. A bookie's id is
its pod's stable DNS name and port, so a rescheduled pod with a new IP is the same bookie
(no cookie mismatch) and the id of ordinal *n* is known without asking the pod.

Pure; safe from anywhere.
"""

from __future__ import annotations

from magnetar_operator import annotations as ann
from magnetar_operator.spec import ClusterSpec

ETCD, BOOKIE, BROKER, PROXY, AUTORECOVERY = "etcd", "bookie", "broker", "proxy", "autorecovery"
INIT, AUDIT = "init", "audit"

BINARY_PORT = 6650
WEB_PORT = 8080
BINARY_TLS_PORT = 6651
WEB_TLS_PORT = 8443
BOOKIE_PORT = 3181
BOOKIE_HTTP_PORT = 8000
AUTORECOVERY_HTTP_PORT = 8000
ETCD_CLIENT_PORT = 2379
ETCD_PEER_PORT = 2380


def child(spec: ClusterSpec, component: str) -> str:
    """The name of ``component``'s objects (StatefulSet, Service, ConfigMap, PDB ...)."""
    return f"{spec.name}-{component}"


def labels(spec: ClusterSpec, component: str) -> dict[str, str]:
    """The labels of ``component``'s objects and pods (also its selector)."""
    return {
        ann.NAME: "magnetar",
        ann.INSTANCE: spec.name,
        ann.COMPONENT: component,
        ann.MANAGED_BY: ann.OPERATOR,
    }


def selector(spec: ClusterSpec, component: str) -> dict[str, str]:
    """The immutable part of :func:`labels` that selectors use."""
    return {ann.INSTANCE: spec.name, ann.COMPONENT: component}


def service_host(spec: ClusterSpec, component: str) -> str:
    return f"{child(spec, component)}.{spec.namespace}.svc"


def pod_host(spec: ClusterSpec, component: str, ordinal: int) -> str:
    """The stable DNS name of a StatefulSet pod (through its headless Service)."""
    return f"{child(spec, component)}-{ordinal}.{service_host(spec, component)}"


def bookie_id(spec: ClusterSpec, ordinal: int) -> str:
    """The bookie id (and advertised address) of bookie pod ``ordinal``."""
    return f"{pod_host(spec, BOOKIE, ordinal)}:{BOOKIE_PORT}"


def bookie_ordinal(spec: ClusterSpec, bookie: str) -> int | None:
    """The ordinal of a bookie id :func:`bookie_id` made, or None for another id."""
    prefix = f"{child(spec, BOOKIE)}-"
    host = bookie.split(".", 1)[0]
    if not host.startswith(prefix) or not host[len(prefix) :].isdigit():
        return None
    ordinal = int(host[len(prefix) :])
    return ordinal if bookie == bookie_id(spec, ordinal) else None


def metadata_url(spec: ClusterSpec) -> str:
    """The ``etcd://`` URL every role gets (the managed members, or the external ones)."""
    store = spec.metadata_store
    if store.managed:
        hosts = [
            f"{pod_host(spec, ETCD, i)}:{ETCD_CLIENT_PORT}" for i in range(store.etcd.replicas)
        ]
    else:
        hosts = list(store.external_endpoints)
    return "etcd://" + ",".join(hosts)


def broker_web_url(spec: ClusterSpec) -> str:
    return f"http://{service_host(spec, BROKER)}:{WEB_PORT}"


def broker_service_url(spec: ClusterSpec) -> str:
    return f"pulsar://{service_host(spec, BROKER)}:{BINARY_PORT}"


def service_url(spec: ClusterSpec) -> str:
    """Where clients connect: the proxy when enabled, else the brokers."""
    if spec.proxy.enabled:
        return f"pulsar://{service_host(spec, PROXY)}:{BINARY_PORT}"
    return broker_service_url(spec)


def web_url(spec: ClusterSpec) -> str:
    if spec.proxy.enabled:
        return f"http://{service_host(spec, PROXY)}:{WEB_PORT}"
    return broker_web_url(spec)


def service_url_tls(spec: ClusterSpec) -> str:
    """The ``pulsar+ssl://`` URL clients use with TLS (the proxy's, or the brokers')."""
    front = PROXY if spec.proxy.enabled else BROKER
    return f"pulsar+ssl://{service_host(spec, front)}:{BINARY_TLS_PORT}"


def web_url_tls(spec: ClusterSpec) -> str:
    front = PROXY if spec.proxy.enabled else BROKER
    return f"https://{service_host(spec, front)}:{WEB_TLS_PORT}"


def broker_service_url_tls(spec: ClusterSpec) -> str:
    return f"pulsar+ssl://{service_host(spec, BROKER)}:{BINARY_TLS_PORT}"


def broker_web_url_tls(spec: ClusterSpec) -> str:
    return f"https://{service_host(spec, BROKER)}:{WEB_TLS_PORT}"
