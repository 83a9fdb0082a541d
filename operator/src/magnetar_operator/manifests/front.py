"""The proxy (Deployment + Service of the type the spec names) and autorecovery (Deployment):
the last roles to start and to roll, after the brokers. Pure.
"""

from __future__ import annotations

from magnetar_operator.manifests.pod import (
    Obj,
    container,
    field_env,
    http_probe,
    meta,
    pdb,
    pod_spec,
    service,
    template,
)
from magnetar_operator.names import (
    AUTORECOVERY,
    AUTORECOVERY_HTTP_PORT,
    BINARY_PORT,
    PROXY,
    WEB_PORT,
    child,
    metadata_url,
    selector,
)
from magnetar_operator.spec import ClusterSpec

PROXY_HEALTH = "/status.html"
AUTORECOVERY_READY = "/api/v1/autorecovery/is_ready"


def _deployment(spec: ClusterSpec, component: str, replicas: int, pod: Obj, port: int) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta(spec, child(spec, component), component),
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": selector(spec, component)},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1},
            },
            "template": template(spec, component, pod, metrics_port=port),
        },
    }


def proxy_objects(spec: ClusterSpec) -> list[Obj]:
    if not spec.proxy.enabled:
        return []
    args = [
        "proxy",
        "--metadata", metadata_url(spec),
        "--service-port", str(BINARY_PORT),
        "--web-service-port", str(WEB_PORT),
        "--bind-address", "0.0.0.0",
        "--advertised-address", "$(POD_IP)",
    ]  # fmt: skip
    main = container(
        spec,
        "proxy",
        args,
        ports=[("pulsar", BINARY_PORT), ("http", WEB_PORT)],
        resources=spec.proxy.resources,
        env=[field_env("POD_IP", "status.podIP")],
    )
    main["readinessProbe"] = http_probe(PROXY_HEALTH, WEB_PORT)
    main["livenessProbe"] = http_probe(PROXY_HEALTH, WEB_PORT, failures=6, delay=30)
    main["lifecycle"] = {"preStop": {"sleep": {"seconds": 5}}}
    pod = pod_spec(spec, PROXY, [main], terminationGracePeriodSeconds=30)
    ports = [("pulsar", BINARY_PORT), ("http", WEB_PORT)]
    return [
        service(
            spec,
            PROXY,
            ports,
            service_type=spec.proxy.service_type,
            annotations=spec.proxy.service_annotations,
        ),
        pdb(spec, PROXY, 1),
        _deployment(spec, PROXY, spec.proxy.replicas, pod, WEB_PORT),
    ]


def autorecovery_objects(spec: ClusterSpec) -> list[Obj]:
    if not spec.autorecovery.enabled:
        return []
    args = [
        "autorecovery",
        "--metadata", metadata_url(spec),
        "--http-server-port", str(AUTORECOVERY_HTTP_PORT),
        "--bind-address", "0.0.0.0",
        "--autorecovery-id", "$(POD_NAME)",
    ]  # fmt: skip
    main = container(
        spec,
        "autorecovery",
        args,
        ports=[("http", AUTORECOVERY_HTTP_PORT)],
        resources=spec.autorecovery.resources,
        env=[field_env("POD_NAME", "metadata.name")],
    )
    main["readinessProbe"] = http_probe(AUTORECOVERY_READY, AUTORECOVERY_HTTP_PORT)
    main["livenessProbe"] = http_probe(
        AUTORECOVERY_READY, AUTORECOVERY_HTTP_PORT, failures=6, delay=30
    )
    pod = pod_spec(spec, AUTORECOVERY, [main], terminationGracePeriodSeconds=30)
    replicas = spec.autorecovery.replicas
    return [_deployment(spec, AUTORECOVERY, replicas, pod, AUTORECOVERY_HTTP_PORT)]
