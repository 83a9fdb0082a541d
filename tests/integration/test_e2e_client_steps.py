"""The e2e script's client and admin steps, for real, against a standalone on loopback.

e2e/run.py runs where kind exists; here its steps that talk Pulsar run unchanged against a
real ``magnetar standalone``: the Kubernetes side (``kubectl get``, the port-forward) is
replaced by the standalone's own endpoints, so the official ``pulsar-client`` code and the
admin-API check that a deleted Topic is gone are the ones the kind run executes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest

from tests.kit.kube import load_e2e_script
from tests.kit.standalone import StandaloneProcess, admin_call

TOPIC = {
    "apiVersion": "pulsar.magnetar.dev/v1alpha1",
    "kind": "Topic",
    "metadata": {"name": "e2e-orders-incoming"},
    "spec": {"clusterRef": "demo", "namespace": "e2e/orders", "name": "incoming"},
}
FULL_NAME = "persistent://e2e/orders/incoming"


@pytest.fixture(scope="module")
def e2e() -> ModuleType:
    return load_e2e_script()


@pytest.fixture(scope="module")
def pulsar_namespace(standalone: StandaloneProcess) -> None:
    admin_call(standalone, "PUT", "/admin/v2/tenants/e2e", {"allowedClusters": ["standalone"]})
    admin_call(standalone, "PUT", "/admin/v2/namespaces/e2e/orders")


def _loopback_shell(
    e2e: ModuleType, standalone: StandaloneProcess, on_kubectl: Callable[[tuple[str, ...]], None]
) -> Any:
    """The script's Shell with Kubernetes replaced by the standalone's endpoints."""

    class LoopbackShell(e2e.Shell):
        def get(self, kind: str, name: str) -> dict[str, Any]:
            return {"status": {"endpoints": {"serviceUrl": "pulsar://demo-proxy.pulsar.svc:6650"}}}

        def kubectl(self, *args: str, stdin: str | None = None, check: bool = True) -> str:
            on_kubectl(args)
            return ""

        @contextlib.contextmanager
        def port_forward(self, service: str, port: int) -> Iterator[int]:
            yield {6650: standalone.broker_port, 8080: standalone.web_port}[port]

    return LoopbackShell(e2e.Options(timeout=30), log=lambda line: None)


@pytest.mark.usefixtures("pulsar_namespace")
def test_produce_and_consume_step_with_the_official_client(
    e2e: ModuleType, standalone: StandaloneProcess
) -> None:
    admin_call(standalone, "PUT", "/admin/v2/persistent/e2e/orders/incoming/partitions", 4)
    sh = _loopback_shell(e2e, standalone, lambda args: None)
    e2e.produce_and_consume(sh, "demo", FULL_NAME, "first")
    e2e.produce_and_consume(sh, "demo", FULL_NAME, "rolled")  # a new subscription each time


@pytest.mark.usefixtures("pulsar_namespace")
def test_delete_topic_step_fails_while_the_topic_is_listed_and_passes_once_gone(
    e2e: ModuleType, standalone: StandaloneProcess
) -> None:
    admin_call(standalone, "PUT", "/admin/v2/persistent/e2e/orders/gone/partitions", 2)
    topic = {**TOPIC, "spec": {**TOPIC["spec"], "name": "gone"}}
    ignored = _loopback_shell(e2e, standalone, lambda args: None)
    with pytest.raises(e2e.StepFailed, match="persistent://e2e/orders/gone is still listed"):
        e2e.delete_topic(ignored, "demo", topic)

    def operator_deletes(args: tuple[str, ...]) -> None:
        """What the operator does for a Topic with deletionPolicy Delete."""
        if args[2:4] == ("delete", "topics.pulsar.magnetar.dev"):
            admin_call(standalone, "DELETE", "/admin/v2/persistent/e2e/orders/gone/partitions")

    e2e.delete_topic(_loopback_shell(e2e, standalone, operator_deletes), "demo", topic)
