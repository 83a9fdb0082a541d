"""The pure helpers of the Kubernetes adapter: what a patch sends and what it leaves alone."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from magnetar_operator.kube import (
    Kube,
    KubeError,
    collection_path,
    frozen_changes,
    object_path,
    patch_body,
)
from magnetar_operator.main import main
from magnetar_operator.manifests import Stage, cluster_objects
from magnetar_operator.spec import ClusterSpec
from tests.kit.crd import EXAMPLES_DIR


def _bookies(size: str) -> dict[str, object]:
    doc = yaml.safe_load((EXAMPLES_DIR / "pulsarcluster-minimal.yaml").read_text())
    doc["spec"]["bookies"]["ledgers"] = {"size": size}
    spec = ClusterSpec.parse("demo", "ns", doc["spec"])
    return cluster_objects(spec)[Stage.BOOKIES][-1]


def test_paths() -> None:
    assert collection_path("v1", "Service", "ns") == "/api/v1/namespaces/ns/services"
    assert (
        object_path("apps/v1", "StatefulSet", "ns", "b")
        == "/apis/apps/v1/namespaces/ns/statefulsets/b"
    )


def test_a_patch_never_carries_immutable_fields() -> None:
    desired = _bookies("50Gi")
    body = patch_body({}, desired)
    assert "volumeClaimTemplates" not in body["spec"]
    assert "selector" not in body["spec"]
    assert body["spec"]["template"] == desired["spec"]["template"]  # type: ignore[index]


def test_immutable_changes_are_reported_and_server_defaults_are_not() -> None:
    existing = _bookies("50Gi")
    # what the server adds to a claim template is no difference
    for claim in existing["spec"]["volumeClaimTemplates"]:  # type: ignore[index]
        claim["spec"]["volumeMode"] = "Filesystem"
    assert frozen_changes(existing, _bookies("50Gi")) == []
    assert frozen_changes(existing, _bookies("100Gi")) == ["spec.volumeClaimTemplates"]


def test_without_a_cluster_the_operator_exits_with_what_to_do(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Found running the image with no cluster at hand: a kubernetes-client traceback.
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing-config"))
    with pytest.raises(KubeError, match=r"no Kubernetes API.*KUBECONFIG=.*missing-config"):
        Kube.from_environment()
    with pytest.raises(SystemExit) as exited:
        main([])
    assert str(exited.value.code).startswith("magnetar-operator: no Kubernetes API")
