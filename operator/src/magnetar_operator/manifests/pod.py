"""Pieces every role's pod template shares: image, security, scheduling, probes, the hash.

Pure functions returning Kubernetes object dicts (camelCase keys, as the API takes them).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from magnetar_operator import annotations as ann
from magnetar_operator.names import child, labels, selector
from magnetar_operator.spec import ClusterSpec

RUN_AS = 10000  # the image's non-root user (the Dockerfile creates it)
Obj = dict[str, Any]


def meta(spec: ClusterSpec, name: str, component: str, **extra: Any) -> Obj:
    return {"name": name, "namespace": spec.namespace, "labels": labels(spec, component), **extra}


def env_var(name: str, value: str) -> Obj:
    return {"name": name, "value": value}


def field_env(name: str, path: str) -> Obj:
    """An environment variable from the downward API (``metadata.name``, ``status.podIP``)."""
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def http_probe(path: str, port: int, *, period: int = 10, failures: int = 3, delay: int = 0) -> Obj:
    return {
        "httpGet": {"path": path, "port": port},
        "periodSeconds": period,
        "failureThreshold": failures,
        "timeoutSeconds": 5,
        "initialDelaySeconds": delay,
    }


def container(
    spec: ClusterSpec,
    name: str,
    args: list[str],
    *,
    ports: list[tuple[str, int]],
    resources: dict[str, Any],
    env: list[Obj] | None = None,
    image: str | None = None,
    command: list[str] | None = None,
) -> Obj:
    """A container of the Magnetar image: ``magnetar ARGS`` (the role is ``args[0]``)."""
    return {
        "name": name,
        "image": image or spec.image,
        "imagePullPolicy": spec.image_pull_policy,
        "command": command or ["magnetar"],
        "args": args,
        "ports": [{"name": p, "containerPort": n, "protocol": "TCP"} for p, n in ports],
        "env": env or [],
        "resources": resources,
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": False,
            "capabilities": {"drop": ["ALL"]},
        },
    }


def _affinity(spec: ClusterSpec, component: str) -> Obj | None:
    term = {"labelSelector": {"matchLabels": selector(spec, component)},
            "topologyKey": "kubernetes.io/hostname"}  # fmt: skip
    match spec.scheduling.anti_affinity:
        case "Required":
            return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
        case "Preferred":
            weighted = {"weight": 100, "podAffinityTerm": term}
            return {
                "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [weighted]}
            }
    return None


def pod_spec(spec: ClusterSpec, component: str, containers: list[Obj], **extra: Any) -> Obj:
    """A PodSpec with the cluster's scheduling and a non-root security context."""
    body: Obj = {
        "containers": containers,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": RUN_AS,
            "runAsGroup": RUN_AS,
            "fsGroup": RUN_AS,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        **extra,
    }
    sched = spec.scheduling
    if (affinity := _affinity(spec, component)) is not None:
        body["affinity"] = affinity
    if sched.topology_spread:
        body["topologySpreadConstraints"] = [
            {"labelSelector": {"matchLabels": selector(spec, component)}, **c}
            for c in sched.topology_spread
        ]
    if sched.node_selector:
        body["nodeSelector"] = dict(sched.node_selector)
    if sched.tolerations:
        body["tolerations"] = [dict(t) for t in sched.tolerations]
    if sched.priority_class:
        body["priorityClassName"] = sched.priority_class
    if spec.image_pull_secrets:
        body["imagePullSecrets"] = [{"name": s} for s in spec.image_pull_secrets]
    return body


def template(
    spec: ClusterSpec,
    component: str,
    pod: Obj,
    *,
    metrics_port: int | None = None,
    config: dict[str, str] | None = None,
) -> Obj:
    """A pod template whose annotations carry a hash of everything in it, of the ConfigMap
    data its pods read (``config``) and the manual-roll value, so that any change rolls the
    pods and an unchanged spec never does."""
    annotations: dict[str, str] = {}
    if config is not None:
        annotations[ann.CONFIG_HASH] = _digest(config)
    if spec.prometheus_annotations and metrics_port is not None:
        annotations.update({"prometheus.io/scrape": "true", "prometheus.io/path": "/metrics",
                            "prometheus.io/port": str(metrics_port)})  # fmt: skip
    if spec.manual_roll and component != "etcd":
        annotations[ann.MANUAL_ROLL] = spec.manual_roll
    body = {"metadata": {"labels": labels(spec, component), "annotations": annotations},
            "spec": pod}  # fmt: skip
    annotations[ann.SPEC_HASH] = _digest(body)
    return body


def _digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def spec_hash(workload: Obj) -> str:
    """The :data:`SPEC_HASH` of a Deployment's or StatefulSet's pod template ('' if none)."""
    annotations = workload.get("spec", {}).get("template", {}).get("metadata", {})
    return str((annotations.get("annotations") or {}).get(ann.SPEC_HASH, ""))


def pdb(spec: ClusterSpec, component: str, max_unavailable: int) -> Obj:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": meta(spec, child(spec, component), component),
        "spec": {
            "maxUnavailable": max_unavailable,
            "selector": {"matchLabels": selector(spec, component)},
        },
    }


def service(
    spec: ClusterSpec,
    component: str,
    ports: list[tuple[str, int]],
    *,
    headless: bool = False,
    service_type: str = "ClusterIP",
    annotations: dict[str, str] | None = None,
) -> Obj:
    """A Service of ``component``; a headless one publishes not-ready pods, so members are
    addressable by name before they are ready (etcd peers, bookies registering)."""
    body: Obj = {
        "type": service_type,
        "selector": selector(spec, component),
        "ports": [{"name": p, "port": n, "targetPort": n, "protocol": "TCP"} for p, n in ports],
    }
    if headless:
        body["clusterIP"] = "None"
        body["publishNotReadyAddresses"] = True
    metadata = meta(spec, child(spec, component), component)
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {"apiVersion": "v1", "kind": "Service", "metadata": metadata, "spec": body}


def config_map(spec: ClusterSpec, component: str, data: dict[str, str]) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta(spec, child(spec, component), component),
        "data": dict(sorted(data.items())),
    }
