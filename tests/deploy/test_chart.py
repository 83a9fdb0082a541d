"""The Helm chart, rendered by Helm's own engine: lint, template, schema, security, RBAC, CRDs.

Every object rendered for every value set below must pass ``kubernetes-validate --strict`` on
the newest Kubernetes its schemas know and on the oldest the chart supports; bad values must be
refused by ``values.schema.json`` with a message naming the offending key.
"""

from __future__ import annotations

import re
from typing import Any

import helm_python as helm
import jsonschema
import pytest

from magnetar_operator.main import build_parser
from tests.kit.kube import (
    CHART,
    KUBERNETES_VERSIONS,
    ROOT,
    crd_files,
    load_documents,
    load_file,
    render_chart,
    rendered_objects,
    validate_object,
)

# Value sets a user would plausibly install with; each renders objects valid on Kubernetes.
GOOD_VALUES: dict[str, dict[str, Any]] = {
    "defaults": {},
    "with-cluster": {"cluster": {"enabled": True}},
    "cluster-spec-merged": {
        "cluster": {
            "enabled": True,
            "name": "prod",
            "bookies": {"replicas": 4},
            "brokers": {"replicas": 3},
            "spec": {"bookies": {"retainVolumesOnDelete": True}, "proxy": {"enabled": True}},
        }
    },
    "secure-cluster": {
        "cluster": {
            "enabled": True,
            "spec": {
                "tls": {"enabled": True, "issuerRef": {"name": "ca", "kind": "ClusterIssuer"}},
                "auth": {"enabled": True, "superUserRoles": ["admin"]},
            },
        }
    },
    "watch-one-namespace": {"operator": {"watchNamespaces": ["team-a"]}},
    "own-service-account-no-rbac": {
        "serviceAccount": {"create": False, "name": "platform-operator"},
        "rbac": {"create": False},
    },
    "pinned-image-and-scheduling": {
        "image": {
            "repository": "registry.example/magnetar",
            "tag": "1.2.3",
            "pullPolicy": "Always",
        },
        "imagePullSecrets": [{"name": "regcred"}],
        "operator": {
            "extraArgs": ["--verbose"],
            "extraEnv": [{"name": "MAGNETAR_LOG_LEVEL", "value": "debug"}],
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
            "podAnnotations": {"prometheus.io/scrape": "false"},
            "priorityClassName": "system-cluster-critical",
        },
    },
    "stopped": {"operator": {"replicas": 0}},
}

# Values the schema must refuse, with the JSON path its message must name.
BAD_VALUES: dict[str, tuple[dict[str, Any], str]] = {
    "two-operators": ({"operator": {"replicas": 2}}, "/operator/replicas"),
    "replicas-as-text": ({"operator": {"replicas": "1"}}, "/operator/replicas"),
    "unknown-top-level-key": ({"operatr": {"replicas": 1}}, "'operatr' not allowed"),
    "unknown-operator-key": (
        {"operator": {"replica": 1}},
        "'/operator': additional properties 'replica'",
    ),
    "bad-pull-policy": ({"image": {"pullPolicy": "Sometimes"}}, "/image/pullPolicy"),
    "empty-repository": ({"image": {"repository": ""}}, "/image/repository"),
    "bad-namespace-name": (
        {"operator": {"watchNamespaces": ["Team_A"]}},
        "/operator/watchNamespaces/0",
    ),
    # magnetar-operator takes one --namespace: a second would crash-loop the pod.
    "two-watched-namespaces": (
        {"operator": {"watchNamespaces": ["team-a", "team-b"]}},
        "/operator/watchNamespaces",
    ),
    "zero-bookies": (
        {"cluster": {"enabled": True, "bookies": {"replicas": 0}}},
        "/cluster/bookies/replicas",
    ),
    "cluster-name-with-dots": ({"cluster": {"name": "my.cluster"}}, "/cluster/name"),
    "health-port-privileged": ({"operator": {"healthPort": 80}}, "/operator/healthPort"),
}


def _objects(values: dict[str, Any]) -> list[dict[str, Any]]:
    return rendered_objects(render_chart(values))


def _kinds(objects: list[dict[str, Any]]) -> list[str]:
    return sorted(o["kind"] for o in objects)


def _operator_deployment(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    return deployment


def test_helm_lint_is_clean() -> None:
    for values in ({}, GOOD_VALUES["with-cluster"]):
        report = helm.lint(str(CHART), values, strict=True, kube_version="v1.30.0")
        assert report["errors"] == []
        # info (1) such as "icon is recommended" is fine; warnings and errors are not
        assert [m for m in report["messages"] if m["severity"] >= 2] == []


def test_helm_lint_reports_a_broken_template(tmp_path: Any) -> None:
    """The lint is real: a template with a syntax error is an error finding."""
    broken = tmp_path / "magnetar"
    with helm.Chart.load(str(CHART)) as chart:
        chart.save_dir(str(tmp_path))
    (broken / "templates" / "broken.yaml").write_text("{{ if }}\n")
    report = helm.lint(str(broken), {}, strict=True)
    assert report["errors"] or [m for m in report["messages"] if m["severity"] == 3]


@pytest.mark.parametrize("name", sorted(GOOD_VALUES))
def test_every_rendered_object_is_valid_kubernetes(name: str) -> None:
    objects = _objects(GOOD_VALUES[name])
    assert objects
    for version in KUBERNETES_VERSIONS:
        for obj in objects:
            validate_object(obj, version)


def test_default_render_has_the_operator_and_its_rbac_only() -> None:
    assert _kinds(_objects({})) == [
        "ClusterRole",
        "ClusterRole",
        "ClusterRoleBinding",
        "ClusterRoleBinding",
        "Deployment",
        "ServiceAccount",
    ]


def test_cluster_enabled_adds_one_pulsar_cluster_with_the_chart_image() -> None:
    objects = _objects(
        {
            "image": {"repository": "reg/magnetar", "tag": "7"},
            "cluster": {
                "enabled": True,
                "name": "prod",
                "bookies": {"replicas": 4},
                "spec": {"bookies": {"retainVolumesOnDelete": False}, "rollout": {"paused": True}},
            },
        }
    )
    (cluster,) = [o for o in objects if o["kind"] == "PulsarCluster"]
    assert cluster["apiVersion"] == "pulsar.magnetar.dev/v1alpha1"
    assert cluster["metadata"] == {**cluster["metadata"], "name": "prod", "namespace": "pulsar"}
    assert cluster["spec"] == {
        "image": "reg/magnetar:7",
        "bookies": {"replicas": 4, "retainVolumesOnDelete": False},
        "brokers": {"replicas": 2},
        "rollout": {"paused": True},
    }


def test_cluster_tls_and_auth_pass_through_to_the_pulsar_cluster() -> None:
    values = GOOD_VALUES["secure-cluster"]
    (cluster,) = [o for o in _objects(values) if o["kind"] == "PulsarCluster"]
    assert cluster["spec"]["tls"] == values["cluster"]["spec"]["tls"]
    assert cluster["spec"]["auth"] == values["cluster"]["spec"]["auth"]


def test_cluster_spec_image_wins_over_the_chart_image() -> None:
    objects = _objects({"cluster": {"enabled": True, "spec": {"image": "other/magnetar:9"}}})
    (cluster,) = [o for o in objects if o["kind"] == "PulsarCluster"]
    assert cluster["spec"]["image"] == "other/magnetar:9"


def test_a_typo_in_the_cluster_spec_fails_against_the_crd_schema() -> None:
    """cluster.spec is free-form in the chart; the CRD's schema is what refuses a typo."""
    objects = _objects({"cluster": {"enabled": True, "spec": {"bookie": {"replicas": 5}}}})
    (cluster,) = [o for o in objects if o["kind"] == "PulsarCluster"]
    with pytest.raises(jsonschema.ValidationError, match="'bookie' was unexpected"):
        validate_object(cluster, KUBERNETES_VERSIONS[0])


@pytest.mark.parametrize("name", sorted(BAD_VALUES))
def test_bad_values_are_refused_by_the_schema(name: str) -> None:
    values, path = BAD_VALUES[name]
    with pytest.raises(helm.HelmValuesError) as refused:
        render_chart(values)
    assert path in str(refused.value)


def test_no_helm_hooks_anywhere() -> None:
    """Cluster init is the operator's Job: GitOps tools skip or repeat Helm hooks."""
    for template in (CHART / "templates").iterdir():
        assert "helm.sh/hook" not in template.read_text(), template.name
    for name, values in GOOD_VALUES.items():
        for obj in _objects(values):
            annotations = obj["metadata"].get("annotations") or {}
            assert not [a for a in annotations if a.startswith("helm.sh/hook")], (name, obj)


def test_the_operator_runs_restricted() -> None:
    """Pod Security Standards "restricted": non-root, read-only root, no caps, seccomp."""
    pod = _operator_deployment(_objects({}))["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    for container in pod["containers"]:
        ctx = container["securityContext"]
        assert ctx["allowPrivilegeEscalation"] is False
        assert ctx["readOnlyRootFilesystem"] is True
        assert ctx["runAsNonRoot"] is True
        assert ctx["capabilities"] == {"drop": ["ALL"]}
        assert ctx["seccompProfile"] == {"type": "RuntimeDefault"}
        assert container["resources"]["requests"]["cpu"]
        assert container["resources"]["requests"]["memory"]


def test_the_operator_container_runs_kopf_with_its_health_probes() -> None:
    deployment = _operator_deployment(_objects({"operator": {"healthPort": 9090}}))
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "magnetar:0.1.0"  # the appVersion when no tag is given
    assert container["command"] == ["magnetar-operator"]
    assert container["args"] == ["--liveness-port=9090"]
    assert container["ports"] == [{"name": "health", "containerPort": 9090, "protocol": "TCP"}]
    for probe in ("livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": "health"}


@pytest.mark.parametrize("values", ["defaults", "watch-one-namespace"])
def test_the_operator_command_line_accepts_the_charts_arguments(values: str) -> None:
    # The chart once passed kopf's own flags (--liveness=URL, --all-namespaces): the pod
    # exited with a usage error. Parse what the chart renders with the real parser.
    objects = _objects(GOOD_VALUES[values])
    (container,) = _operator_deployment(objects)["spec"]["template"]["spec"]["containers"]
    args = build_parser().parse_args(container["args"])
    assert args.liveness_port == container["ports"][0]["containerPort"]
    assert args.namespace == (None if values == "defaults" else "team-a")


def test_a_watched_namespace_gets_a_role_binding_instead_of_a_cluster_binding() -> None:
    objects = _objects({"operator": {"watchNamespaces": ["team-a"]}})
    (container,) = _operator_deployment(objects)["spec"]["template"]["spec"]["containers"]
    assert container["args"][1:] == ["--namespace=team-a"]
    bindings = [o for o in objects if o["kind"] == "RoleBinding"]
    assert [b["metadata"]["namespace"] for b in bindings] == ["team-a"]
    assert {b["roleRef"]["name"] for b in bindings} == {"magnetar-operator"}
    cluster_bindings = [o["roleRef"]["name"] for o in objects if o["kind"] == "ClusterRoleBinding"]
    assert cluster_bindings == ["magnetar-operator-cluster"]  # discovery and peering only


def _granted(objects: list[dict[str, Any]], role: str) -> set[tuple[str, str, str]]:
    (cluster_role,) = [
        o for o in objects if o["kind"] == "ClusterRole" and o["metadata"]["name"] == role
    ]
    return {
        (group, resource, verb)
        for rule in cluster_role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_rbac_grants_what_the_operator_manages() -> None:
    objects = _objects({})
    granted = _granted(objects, "magnetar-operator")
    crud = ("get", "list", "watch", "create", "update", "patch", "delete")
    kinds = ("pulsarclusters", "tenants", "namespaces", "topics")
    needed = {
        *[("pulsar.magnetar.dev", r, v) for r in kinds for v in ("get", "list", "watch", "patch")],
        *[("pulsar.magnetar.dev", f"{r}/status", "patch") for r in kinds],
        *[("apps", r, v) for r in ("statefulsets", "deployments") for v in crud],
        *[("", r, v) for r in ("services", "configmaps") for v in crud],
        *[("policy", "poddisruptionbudgets", v) for v in crud],
        *[("batch", "jobs", v) for v in crud],
        *[("sparkoperator.k8s.io", "scheduledsparkapplications", v) for v in crud],
        *[("cert-manager.io", "certificates", v) for v in ("get", "create", "patch")],
        *[("", "secrets", v) for v in ("get", "create", "patch")],
        *[("", "persistentvolumeclaims", v) for v in ("get", "list", "delete")],
        ("", "events", "create"),
        ("kopf.dev", "kopfpeerings", "patch"),
    }
    assert needed - granted == set()
    # PVCs come from volume claim templates; the operator never creates or rewrites one
    assert ("", "persistentvolumeclaims", "create") not in granted
    assert ("", "persistentvolumeclaims", "update") not in granted
    cluster = _granted(objects, "magnetar-operator-cluster")
    assert ("apiextensions.k8s.io", "customresourcedefinitions", "list") in cluster
    assert ("kopf.dev", "clusterkopfpeerings", "patch") in cluster
    assert not [g for g in granted | cluster if "*" in g]


def test_notes_render_for_both_modes() -> None:
    assert "pulsarcluster/<name>" in render_chart({})["magnetar/templates/NOTES.txt"]
    notes = render_chart({"cluster": {"enabled": True, "name": "prod"}})
    assert "pulsarcluster/prod" in notes["magnetar/templates/NOTES.txt"]


# ------------------------------------------------------------------------------------ CRDs


def test_chart_crds_are_exact_copies_of_the_repository_crds() -> None:
    """A chart cannot read outside its folder, so it ships copies: `make chart-crds`."""
    chart_crds = CHART / "crds"
    source = {p.name: p.read_text() for p in crd_files()}
    shipped = {p.name: p.read_text() for p in chart_crds.iterdir()}
    assert source, "crds/ has no CRD"
    assert shipped == source, "charts/magnetar/crds/ drifted from crds/: run `make chart-crds`"


def test_one_crd_per_kind_for_the_four_kinds() -> None:
    names: list[str] = []
    kinds: list[str] = []
    for path in crd_files():
        for doc in load_file(path):
            assert doc["kind"] == "CustomResourceDefinition", path.name
            for version in KUBERNETES_VERSIONS:
                validate_object(doc, version)
            names.append(doc["metadata"]["name"])
            kinds.append(doc["spec"]["names"]["kind"])
    assert sorted(names) == sorted(set(names)), f"a CRD is defined twice: {names}"
    assert sorted(kinds) == ["Namespace", "PulsarCluster", "Tenant", "Topic"]


def test_crds_are_shipped_plainly_never_templated() -> None:
    """Helm installs crds/ before the templates and never templates or deletes them."""
    with helm.Chart.load(str(CHART)) as chart:
        shipped = sorted(c["name"] for c in chart.crds)
    assert shipped == sorted(f"crds/{p.name}" for p in crd_files())
    for path in (CHART / "crds").iterdir():
        assert "{{" not in path.read_text(), path.name
    for obj in _objects(GOOD_VALUES["with-cluster"]):
        assert obj["kind"] != "CustomResourceDefinition"


def test_yaml_with_a_duplicate_key_is_refused() -> None:
    """The strict loader the tests rely on does catch duplicate keys."""
    with pytest.raises(Exception, match="duplicate key 'a'"):
        load_documents("a: 1\na: 2\n")


def test_chart_version_and_app_version_follow_the_package() -> None:
    (chart_yaml,) = load_file(CHART / "Chart.yaml")
    pyproject = (ROOT / "pyproject.toml").read_text()
    match = re.search(r'^version = "([^"]+)"', pyproject, re.MULTILINE)
    assert match
    assert chart_yaml["appVersion"] == match.group(1)


def test_the_crd_default_image_is_the_chart_default_image() -> None:
    """A PulsarCluster without spec.image runs the image the chart's operator runs."""
    (values,) = load_file(CHART / "values.yaml")
    (chart_yaml,) = load_file(CHART / "Chart.yaml")
    (crd,) = [
        doc
        for path in crd_files()
        for doc in load_file(path)
        if doc["spec"]["names"]["kind"] == "PulsarCluster"
    ]
    (version,) = crd["spec"]["versions"]
    image = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["image"]
    assert image["default"] == f"{values['image']['repository']}:{chart_yaml['appVersion']}"
