"""The proxy (Deployment + Service of the type the spec names) and autorecovery (Deployment):
the last roles to start and to roll, after the brokers. Pure.
"""

from __future__ import annotations

from magnetar_operator.manifests.pod import (
    Obj,
    container,
    env_var,
    field_env,
    http_probe,
    meta,
    pdb,
    pod_spec,
    service,
    template,
)
from magnetar_operator.manifests.security import (
    autorecovery_security_settings,
    env_of,
    key_volumes,
    proxy_security_settings,
    proxy_token_volumes,
    tls_volumes,
)
from magnetar_operator.names import (
    AUTORECOVERY,
    AUTORECOVERY_HTTP_PORT,
    BINARY_PORT,
    BINARY_TLS_PORT,
    PROXY,
    WEB_PORT,
    WEB_TLS_PORT,
    child,
    metadata_url,
    selector,
)
from magnetar_operator.spec import ClusterSpec

PROXY_HEALTH = "/status.html"
AUTORECOVERY_READY = "/api/v1/autorecovery/is_ready"


def _ports(spec: ClusterSpec) -> list[tuple[str, int]]:
    ports = [("pulsar", BINARY_PORT), ("http", WEB_PORT)]
    if spec.tls.enabled:
        ports += [("pulsar-tls", BINARY_TLS_PORT), ("https", WEB_TLS_PORT)]
    return ports


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


def _env(prefix: str, settings: dict[str, str]) -> list[Obj]:
    return [env_var(k, v) for k, v in sorted(env_of(prefix, settings).items())]


def _mount(main: Obj, extra: Obj, pairs: list[tuple[list[Obj], list[Obj]]]) -> None:
    """Add the Secret volumes and their mounts of ``pairs`` to a container and its pod."""
    volumes = [v for vs, _ in pairs for v in vs]
    if volumes:
        main["volumeMounts"] = [m for _, ms in pairs for m in ms]
        extra["volumes"] = volumes


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
        ports=_ports(spec),
        resources=spec.proxy.resources,
        env=[field_env("POD_IP", "status.podIP"), *_env("PROXY", proxy_security_settings(spec))],
    )
    main["readinessProbe"] = http_probe(PROXY_HEALTH, WEB_PORT)
    main["livenessProbe"] = http_probe(PROXY_HEALTH, WEB_PORT, failures=6, delay=30)
    main["lifecycle"] = {"preStop": {"sleep": {"seconds": 5}}}
    extra: Obj = {"terminationGracePeriodSeconds": 30}
    _mount(main, extra, [tls_volumes(spec), key_volumes(spec), proxy_token_volumes(spec)])
    pod = pod_spec(spec, PROXY, [main], **extra)
    return [
        service(
            spec,
            PROXY,
            _ports(spec),
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
        env=[
            field_env("POD_NAME", "metadata.name"),
            *_env("AUTORECOVERY", autorecovery_security_settings(spec)),
        ],
    )
    main["readinessProbe"] = http_probe(AUTORECOVERY_READY, AUTORECOVERY_HTTP_PORT)
    main["livenessProbe"] = http_probe(
        AUTORECOVERY_READY, AUTORECOVERY_HTTP_PORT, failures=6, delay=30
    )
    extra: Obj = {"terminationGracePeriodSeconds": 30}
    _mount(main, extra, [tls_volumes(spec)])
    pod = pod_spec(spec, AUTORECOVERY, [main], **extra)
    replicas = spec.autorecovery.replicas
    return [_deployment(spec, AUTORECOVERY, replicas, pod, AUTORECOVERY_HTTP_PORT)]
