"""The managed etcd: a headless Service, a StatefulSet of members, a PodDisruptionBudget.

Members are ``<cluster>-etcd-<n>``; each knows the whole initial cluster from the replica
count, so the set bootstraps without discovery. Its size is fixed at creation (etcd membership
changes need ``etcdctl member add``; the operator does not resize a running etcd). Pure.
"""

from __future__ import annotations

from magnetar_operator.manifests.pod import Obj, http_probe, meta, pdb, pod_spec, service, template
from magnetar_operator.names import (
    ETCD,
    ETCD_CLIENT_PORT,
    ETCD_PEER_PORT,
    child,
    labels,
    pod_host,
    selector,
)
from magnetar_operator.spec import ClusterSpec

DATA = "/var/lib/etcd"


def etcd_objects(spec: ClusterSpec) -> list[Obj]:
    """The etcd children, or none when the metadata store is external."""
    if not spec.metadata_store.managed:
        return []
    etcd = spec.metadata_store.etcd
    name = child(spec, ETCD)
    peers = ",".join(
        f"{name}-{i}=http://{pod_host(spec, ETCD, i)}:{ETCD_PEER_PORT}"
        for i in range(etcd.replicas)
    )
    own = f"$(POD_NAME).{name}.{spec.namespace}.svc"
    args = [
        "--name=$(POD_NAME)",
        f"--data-dir={DATA}",
        f"--listen-client-urls=http://0.0.0.0:{ETCD_CLIENT_PORT}",
        f"--advertise-client-urls=http://{own}:{ETCD_CLIENT_PORT}",
        f"--listen-peer-urls=http://0.0.0.0:{ETCD_PEER_PORT}",
        f"--initial-advertise-peer-urls=http://{own}:{ETCD_PEER_PORT}",
        f"--initial-cluster={peers}",
        "--initial-cluster-state=new",
        f"--initial-cluster-token={spec.namespace}-{name}",
        f"--listen-metrics-urls=http://0.0.0.0:{ETCD_CLIENT_PORT + 2}",
    ]
    container = {
        "name": "etcd",
        "image": etcd.image,
        "imagePullPolicy": spec.image_pull_policy,
        "command": ["etcd"],
        "args": args,
        "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
        "ports": [
            {"name": "client", "containerPort": ETCD_CLIENT_PORT, "protocol": "TCP"},
            {"name": "peer", "containerPort": ETCD_PEER_PORT, "protocol": "TCP"},
            {"name": "metrics", "containerPort": ETCD_CLIENT_PORT + 2, "protocol": "TCP"},
        ],
        "readinessProbe": http_probe("/health", ETCD_CLIENT_PORT + 2),
        # alive = serving; /health also fails without a quorum, which a restart cannot fix
        "livenessProbe": {
            "tcpSocket": {"port": ETCD_CLIENT_PORT},
            "periodSeconds": 10,
            "failureThreshold": 6,
            "initialDelaySeconds": 30,
        },
        "resources": etcd.resources,
        "volumeMounts": [{"name": "data", "mountPath": DATA}],
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
    }
    claim: Obj = {
        "metadata": {"name": "data", "labels": labels(spec, ETCD)},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": etcd.storage.size}},
        },
    }
    if etcd.storage.storage_class:
        claim["spec"]["storageClassName"] = etcd.storage.storage_class
    statefulset = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": meta(spec, name, ETCD),
        "spec": {
            "serviceName": name,
            "replicas": etcd.replicas,
            "podManagementPolicy": "Parallel",  # members must start together to form a quorum
            "selector": {"matchLabels": selector(spec, ETCD)},
            "template": template(spec, ETCD, pod_spec(spec, ETCD, [container])),
            "volumeClaimTemplates": [claim],
            "persistentVolumeClaimRetentionPolicy": {
                "whenDeleted": "Retain",
                "whenScaled": "Retain",
            },
        },
    }
    ports = [("client", ETCD_CLIENT_PORT), ("peer", ETCD_PEER_PORT)]
    return [service(spec, ETCD, ports, headless=True), pdb(spec, ETCD, 1), statefulset]
