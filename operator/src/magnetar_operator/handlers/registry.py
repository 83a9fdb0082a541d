"""The operator's kopf registry and settings: login, probes, finalizer and storage prefixes,
watch timeouts. Called once by the entry point (and by tests) before ``kopf.operator``.
"""

from __future__ import annotations

from typing import Any

import kopf

from magnetar_operator import annotations as ann
from magnetar_operator.settings import OperatorSettings


def register_common(registry: kopf.OperatorRegistry) -> None:
    """Login as the pod's service account, else with the kubeconfig (``KUBECONFIG``), and a
    liveness probe."""

    @kopf.on.login(registry=registry)
    def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
        return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)

    @kopf.on.probe(id="alive", registry=registry)
    def alive(**_: Any) -> bool:
        return True


def configure(kopf_settings: kopf.OperatorSettings, settings: OperatorSettings) -> None:
    """Our finalizer and progress-storage prefix (not kopf's default ``kopf.zalando.org``),
    watch timeouts so a silent watch is re-established, and one operator per cluster."""
    kopf_settings.persistence.finalizer = ann.FINALIZER
    kopf_settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=ann.PREFIX)
    kopf_settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=ann.PREFIX, key="last-handled-configuration"
    )
    kopf_settings.watching.server_timeout = settings.watch_server_timeout_s
    kopf_settings.watching.client_timeout = settings.watch_client_timeout_s
    kopf_settings.posting.level = 20  # INFO and above become Kubernetes Events
    if settings.namespace is not None:
        # One namespace: no cluster-wide list/watch of namespaces and CRDs, so the operator's
        # Role needs no cluster-wide rights (the CRDs must exist before it starts).
        kopf_settings.scanning.disabled = True


def build_registry(settings: OperatorSettings) -> kopf.OperatorRegistry:
    """Every handler of the operator on a fresh registry."""
    from magnetar_operator.handlers.cluster import register as register_clusters
    from magnetar_operator.handlers.resources import register as register_resources
    from magnetar_operator.handlers.resync import register as register_resync

    registry = kopf.OperatorRegistry()
    register_common(registry)
    register_clusters(registry, settings)
    register_resources(registry, settings)
    register_resync(registry, settings)
    return registry
