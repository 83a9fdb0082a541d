"""skaffold.yaml, checked without skaffold: its structure, and that what it deploys is valid.

skaffold is not installed here, so the test checks the keys skaffold's v4beta schema requires,
that every path it names exists, that its image is the one the chart runs, and that the values
it sets (parsed by Helm's own --set parser, templates filled in) render a valid chart with a
PulsarCluster the examples' Tenant, Namespace and Topic refer to.
"""

from __future__ import annotations

import re
from typing import Any

import helm_python as helm

from tests.kit.kube import (
    KUBERNETES_VERSIONS,
    ROOT,
    load_file,
    render_chart,
    rendered_objects,
    validate_object,
)

TOP_LEVEL = {"apiVersion", "kind", "metadata", "requires", "build", "test", "render"}
TOP_LEVEL |= {"manifests", "deploy", "portForward", "profiles", "verify", "customActions"}
HELM_RELEASE = {
    "name", "chartPath", "remoteChart", "valuesFiles", "namespace", "version", "setValues",
    "setValueTemplates", "setFiles", "createNamespace", "wait", "recreatePods",
    "skipBuildDependencies", "skipTests", "useHelmSecrets", "repo", "upgradeOnChange",
    "overrides", "packaged", "dependsOn",
}  # fmt: skip


def _config() -> dict[str, Any]:
    (config,) = load_file(ROOT / "skaffold.yaml")
    return config


def _release() -> dict[str, Any]:
    (release,) = _config()["deploy"]["helm"]["releases"]
    return release


def test_skaffold_config_has_the_required_structure() -> None:
    config = _config()
    assert re.fullmatch(r"skaffold/v4beta\d+", config["apiVersion"])
    assert config["kind"] == "Config"
    assert set(config) <= TOP_LEVEL, set(config) - TOP_LEVEL
    assert config["build"]["local"]["push"] is False  # kind loads images; nothing is pushed
    assert config["deploy"]["kubeContext"].startswith("kind-")
    assert set(_release()) <= HELM_RELEASE, set(_release()) - HELM_RELEASE


def test_the_artifact_is_the_dockerfile_image_the_chart_runs() -> None:
    (artifact,) = _config()["build"]["artifacts"]
    assert (ROOT / artifact["context"] / artifact["docker"]["dockerfile"]).is_file()
    (values,) = load_file(ROOT / "charts" / "magnetar" / "values.yaml")
    assert artifact["image"] == values["image"]["repository"]
    templates = _release()["setValueTemplates"]
    name = artifact["image"].replace("-", "_").replace(".", "_")
    assert templates["image.repository"] == f"{{{{.IMAGE_REPO_{name}}}}}"
    assert templates["image.tag"] == f"{{{{.IMAGE_TAG_{name}}}}}"


def _values() -> dict[str, Any]:
    """The values skaffold passes with --set, through Helm's own parser."""
    release = _release()
    filled = {"{{.IMAGE_REPO_magnetar}}": "magnetar", "{{.IMAGE_TAG_magnetar}}": "abc1234"}
    pairs = [f"{k}={v}" for k, v in release["setValues"].items()]
    pairs += [f"{k}={filled[v]}" for k, v in release["setValueTemplates"].items()]
    values: dict[str, Any] = helm.parse_set_string(",".join(pairs))
    return values


def test_what_skaffold_deploys_renders_valid_objects_and_a_demo_cluster() -> None:
    release = _release()
    assert (ROOT / release["chartPath"] / "Chart.yaml").is_file()
    objects = rendered_objects(render_chart(_values(), namespace=release["namespace"]))
    for obj in objects:
        for version in KUBERNETES_VERSIONS:
            validate_object(obj, version)
    (cluster,) = [o for o in objects if o["kind"] == "PulsarCluster"]
    assert cluster["spec"]["image"] == "magnetar:abc1234"
    for example in ("tenant.yaml", "namespace.yaml", "topic.yaml"):
        (resource,) = load_file(ROOT / "crds" / "examples" / example)
        assert resource["spec"]["clusterRef"] == cluster["metadata"]["name"], example
