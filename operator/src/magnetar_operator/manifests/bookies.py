"""The bookies: a ConfigMap, a headless Service, a PodDisruptionBudget and a StatefulSet.

Each bookie pod gets a journal and a ledgers volume (PVC templates) and runs
``magnetar bookie`` with its id set to its stable DNS name
(:func:`~magnetar_operator.names.bookie_id`), so a new pod IP is never a new bookie. The
StatefulSet's rolling-update ``partition`` is the operator's lever for rolling one bookie at
a time (:mod:`magnetar_operator.rollout`); the volumes are kept on scale-down and delete
unless ``retainVolumesOnDelete`` is false. Pure.
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
from magnetar_operator.manifests.security import bookie_security_settings, tls_volumes
from magnetar_operator.names import (
    BOOKIE,
    BOOKIE_HTTP_PORT,
    BOOKIE_PORT,
    child,
    labels,
    metadata_url,
    selector,
)
from magnetar_operator.spec import ClusterSpec, Volume

DATA_DIR = "/var/lib/magnetar/bookie"  # the ledgers volume: cookie + ledgers/
JOURNAL_DIR = f"{DATA_DIR}/journal"  # the journal volume
IS_READY = "/api/v1/bookie/is_ready"


def bookie_config(spec: ClusterSpec) -> dict[str, str]:
    """TLS on the gRPC port (when on), then the user's ``config``."""
    base = bookie_security_settings(spec) | spec.bookies.config
    return {f"MAGNETAR_BOOKIE_{k.upper()}": v for k, v in base.items()}


def _claim(spec: ClusterSpec, name: str, volume: Volume) -> Obj:
    claim: Obj = {
        "metadata": {"name": name, "labels": labels(spec, BOOKIE)},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": volume.size}},
        },
    }
    if volume.storage_class:
        claim["spec"]["storageClassName"] = volume.storage_class
    return claim


def bookie_statefulset(spec: ClusterSpec, *, replicas: int, partition: int) -> Obj:
    """The StatefulSet with ``replicas`` pods, updating only ordinals >= ``partition``."""
    name = child(spec, BOOKIE)
    own = f"$(POD_NAME).{name}.{spec.namespace}.svc:{BOOKIE_PORT}"
    args = [
        "bookie",
        "--data-dir", DATA_DIR,
        "--metadata", metadata_url(spec),
        "--port", str(BOOKIE_PORT),
        "--http-server-port", str(BOOKIE_HTTP_PORT),
        "--bind-address", "0.0.0.0",
        "--bookie-id", own,
        "--advertised-address", own,
    ]  # fmt: skip
    main = container(
        spec,
        "bookie",
        args,
        ports=[("grpc", BOOKIE_PORT), ("http", BOOKIE_HTTP_PORT)],
        resources=spec.bookies.resources,
        env=[field_env("POD_NAME", "metadata.name")],
    )
    main["envFrom"] = [{"configMapRef": {"name": name}}]
    main["readinessProbe"] = http_probe(IS_READY, BOOKIE_HTTP_PORT)
    main["livenessProbe"] = http_probe("/metrics", BOOKIE_HTTP_PORT, failures=6, delay=30)
    main["volumeMounts"] = [
        {"name": "ledgers", "mountPath": DATA_DIR},
        {"name": "journal", "mountPath": JOURNAL_DIR},
    ]
    keep = "Retain" if spec.bookies.retain_volumes else "Delete"
    tls, tls_mounts = tls_volumes(spec)
    extra: Obj = {"terminationGracePeriodSeconds": 60}
    if tls:
        main["volumeMounts"] += tls_mounts
        extra["volumes"] = tls
    pod = pod_spec(spec, BOOKIE, [main], **extra)
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": meta(spec, name, BOOKIE),
        "spec": {
            "serviceName": name,
            "replicas": replicas,
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": selector(spec, BOOKIE)},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": partition}},
            "template": template(
                spec, BOOKIE, pod, metrics_port=BOOKIE_HTTP_PORT, config=bookie_config(spec)
            ),
            "volumeClaimTemplates": [
                _claim(spec, "journal", spec.bookies.journal),
                _claim(spec, "ledgers", spec.bookies.ledgers),
            ],
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": keep, "whenScaled": keep},
        },
    }


def bookie_objects(spec: ClusterSpec, *, replicas: int, partition: int) -> list[Obj]:
    ports = [("grpc", BOOKIE_PORT), ("http", BOOKIE_HTTP_PORT)]
    return [
        config_map(spec, BOOKIE, bookie_config(spec)),
        service(spec, BOOKIE, ports, headless=True),
        pdb(spec, BOOKIE, spec.max_unavailable_bookies),
        bookie_statefulset(spec, replicas=replicas, partition=partition),
    ]
