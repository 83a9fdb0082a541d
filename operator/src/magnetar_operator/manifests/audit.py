"""The replication audit: a ServiceAccount, Role and RoleBinding for the Spark driver, and a
``ScheduledSparkApplication`` (Kubeflow spark-operator, ``sparkoperator.k8s.io/v1beta2``) that
runs ``magnetar audit ledgers`` on a cron schedule, never two at once.

The application file is the image's ``magnetar`` console script (a Python file), so
spark-submit runs ``magnetar audit ...`` with the arguments below. Pure.
"""

from __future__ import annotations

from magnetar_operator.manifests.pod import Obj, meta
from magnetar_operator.names import AUDIT, child, labels, metadata_url
from magnetar_operator.spec import ClusterSpec

MAGNETAR_SCRIPT = "local:///opt/magnetar/bin/magnetar"  # in the Dockerfile's venv
AUDIT_OUTPUT = "/tmp/magnetar-audit"  # the driver pod's disk: summary.json, report.html, findings
SPARK_API = "sparkoperator.k8s.io/v1beta2"
# What a Spark driver on Kubernetes needs in its namespace: executor pods, their Services and
# ConfigMaps, and PVCs when executors ask for local storage.
DRIVER_RULES = [
    {"apiGroups": [""], "resources": ["pods", "services", "configmaps", "persistentvolumeclaims"],
     "verbs": ["create", "get", "list", "watch", "delete", "deletecollection", "patch"]},
]  # fmt: skip


def audit_args(spec: ClusterSpec) -> list[str]:
    """``magnetar audit ledgers`` on the cluster's etcd; spark-submit gives the master. The
    report goes to the driver's log (terminal table, progress) and to its local disk."""
    return ["audit", "ledgers", "--metadata", metadata_url(spec), "--output", AUDIT_OUTPUT]


def audit_objects(spec: ClusterSpec) -> list[Obj]:
    if not spec.audit.enabled:
        return []
    name = child(spec, AUDIT)
    audit = spec.audit
    pod_labels = labels(spec, AUDIT)
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(spec, name, AUDIT)}
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": meta(spec, name, AUDIT),
        "rules": DRIVER_RULES,
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": meta(spec, name, AUDIT),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": spec.namespace}],
    }
    application = {
        "apiVersion": SPARK_API,
        "kind": "ScheduledSparkApplication",
        "metadata": meta(spec, name, AUDIT),
        "spec": {
            "schedule": audit.schedule,
            "concurrencyPolicy": "Forbid",
            "successfulRunHistoryLimit": 3,
            "failedRunHistoryLimit": 3,
            "template": {
                "type": "Python",
                "pythonVersion": "3",
                "mode": "cluster",
                "image": audit.image or spec.image,
                "imagePullPolicy": spec.image_pull_policy,
                "sparkVersion": audit.spark_version,
                "mainApplicationFile": MAGNETAR_SCRIPT,
                "arguments": audit_args(spec),
                "restartPolicy": {"type": "Never"},
                "driver": {
                    "cores": audit.driver_cores,
                    "memory": audit.driver_memory,
                    "serviceAccount": name,
                    "labels": pod_labels,
                },
                "executor": {
                    "instances": audit.executor_instances,
                    "cores": audit.executor_cores,
                    "memory": audit.executor_memory,
                    "labels": pod_labels,
                },
            },
        },
    }
    return [account, role, binding, application]
