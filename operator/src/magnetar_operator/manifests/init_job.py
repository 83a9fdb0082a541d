"""The cluster-init Job: ``magnetar cluster init`` creates the cluster's metadata if missing.

Owned by the PulsarCluster and created by the operator once etcd is ready (not a Helm hook,
so GitOps tools neither skip nor repeat it). The command is idempotent, so a re-created Job is
harmless; a Job's pod template is immutable, so the operator creates it and never patches it.
Pure.
"""

from __future__ import annotations

from magnetar_operator.manifests.pod import Obj, container, meta, pod_spec
from magnetar_operator.names import (
    INIT,
    broker_service_url,
    broker_service_url_tls,
    broker_web_url,
    broker_web_url_tls,
    child,
    labels,
    metadata_url,
)
from magnetar_operator.spec import ClusterSpec


def init_job(spec: ClusterSpec) -> Obj:
    args = [
        "cluster", "init",
        "--metadata", metadata_url(spec),
        "--cluster", spec.cluster_name,
        "--web-url", broker_web_url(spec),
        "--service-url", broker_service_url(spec),
    ]  # fmt: skip
    if spec.tls.enabled:  # the cluster's TLS URLs, as Pulsar's cluster data holds them
        args += ["--web-url-tls", broker_web_url_tls(spec),
                 "--service-url-tls", broker_service_url_tls(spec)]  # fmt: skip
    main = container(spec, "init", args, ports=[], resources={})
    pod = pod_spec(spec, INIT, [main], restartPolicy="OnFailure")
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta(spec, child(spec, INIT), INIT),
        "spec": {
            "backoffLimit": 10,
            "template": {"metadata": {"labels": labels(spec, INIT)}, "spec": pod},
        },
    }
