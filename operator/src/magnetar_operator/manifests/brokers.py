"""The brokers: a ConfigMap (settings as ``MAGNETAR_BROKER_*``), a Service, a PDB and a
Deployment.

A broker advertises its pod IP (downward API), so clients and the proxy reach the very pod
that owns a bundle. Stopping is graceful: ``preStop`` waits for the endpoints to drop the pod,
then SIGTERM makes the broker unload its bundles (clients move to other brokers) within
``terminationGracePeriodSeconds``; the roll adds one broker before removing one. Pure.
"""

from __future__ import annotations

from magnetar_operator.manifests.pod import (
    Obj,
    config_map,
    container,
    field_env,
    http_probe,
    meta,
    pdb,
    pod_spec,
    service,
    template,
)
from magnetar_operator.manifests.security import (
    broker_security_settings,
    key_volumes,
    tls_volumes,
)
from magnetar_operator.names import (
    BINARY_PORT,
    BINARY_TLS_PORT,
    BROKER,
    WEB_PORT,
    WEB_TLS_PORT,
    child,
    metadata_url,
    selector,
)
from magnetar_operator.spec import ClusterSpec

HEALTH = "/admin/v2/brokers/health"
PRE_STOP_S = 5


def broker_config(spec: ClusterSpec) -> dict[str, str]:
    """The broker settings: the cluster's name and quorums, TLS and authentication (names
    of mounted files, no secret values), then the user's ``config``."""
    quorums = spec.brokers.defaults
    base = {
        "cluster_name": spec.cluster_name,
        "managed_ledger_default_ensemble_size": str(quorums.ensemble_size),
        "managed_ledger_default_write_quorum": str(quorums.write_quorum),
        "managed_ledger_default_ack_quorum": str(quorums.ack_quorum),
    }
    base.update(broker_security_settings(spec))
    base.update(spec.brokers.config)
    return {f"MAGNETAR_BROKER_{k.upper()}": v for k, v in base.items()}


def broker_deployment(spec: ClusterSpec) -> Obj:
    name = child(spec, BROKER)
    args = [
        "broker",
        "--metadata", metadata_url(spec),
        "--broker-port", str(BINARY_PORT),
        "--web-port", str(WEB_PORT),
        "--bind-address", "0.0.0.0",
        "--advertised-address", "$(POD_IP)",
    ]  # fmt: skip
    main = container(
        spec,
        "broker",
        args,
        ports=_ports(spec),
        resources=spec.brokers.resources,
        env=[field_env("POD_IP", "status.podIP"), field_env("POD_NAME", "metadata.name")],
    )
    main["envFrom"] = [{"configMapRef": {"name": name}}]
    main["readinessProbe"] = http_probe(HEALTH, WEB_PORT)
    main["livenessProbe"] = http_probe(HEALTH, WEB_PORT, failures=6, delay=30)
    main["lifecycle"] = {"preStop": {"sleep": {"seconds": PRE_STOP_S}}}
    (tls, tls_mounts), (key, key_mounts) = tls_volumes(spec), key_volumes(spec)
    extra: Obj = {"terminationGracePeriodSeconds": spec.brokers.termination_grace_s}
    if tls or key:
        main["volumeMounts"] = tls_mounts + key_mounts
        extra["volumes"] = tls + key
    pod = pod_spec(spec, BROKER, [main], **extra)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta(spec, name, BROKER),
        "spec": {
            "replicas": spec.brokers.replicas,
            "selector": {"matchLabels": selector(spec, BROKER)},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1},
            },
            "template": template(
                spec, BROKER, pod, metrics_port=WEB_PORT, config=broker_config(spec)
            ),
        },
    }


def _ports(spec: ClusterSpec) -> list[tuple[str, int]]:
    """Plain ports always; with TLS also 6651 and 8443 (Pulsar's TLS ports)."""
    ports = [("pulsar", BINARY_PORT), ("http", WEB_PORT)]
    if spec.tls.enabled:
        ports += [("pulsar-tls", BINARY_TLS_PORT), ("https", WEB_TLS_PORT)]
    return ports


def broker_objects(spec: ClusterSpec) -> list[Obj]:
    return [
        config_map(spec, BROKER, broker_config(spec)),
        service(spec, BROKER, _ports(spec)),
        pdb(spec, BROKER, 1),
        broker_deployment(spec),
    ]
