"""The CRDs of crds/: their shape, the good examples admitted, each bad example refused by the
rule it breaks (tests/kit/crd.py plays the API server: defaults, schema, CEL)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from tests.kit.crd import EXAMPLES_DIR, admit, load_crds

K8S_VERSION = "1.30.0"
BAD_DIR = Path(__file__).parent / "crd_bad"
CRDS = load_crds()
SHORT_NAMES = {"PulsarCluster": "pc", "Tenant": "ptenant", "Namespace": "pns", "Topic": "ptopic"}


def _docs(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def test_four_crds_in_one_group() -> None:
    assert set(CRDS) == set(SHORT_NAMES)
    for kind, crd in CRDS.items():
        spec = crd["spec"]
        assert spec["group"] == "pulsar.magnetar.dev"
        assert spec["scope"] == "Namespaced"
        assert spec["names"]["shortNames"] == [SHORT_NAMES[kind]]
        assert spec["names"]["categories"] == ["pulsar"]
        (version,) = spec["versions"]
        assert version["name"] == "v1alpha1"
        assert version["subresources"] == {"status": {}}
        columns = [c["name"] for c in version["additionalPrinterColumns"]]
        assert columns[0] == "Ready"
        assert "Age" in columns
        assert ("Phase" if kind == "PulsarCluster" else "Pulsar-Name") in columns


@pytest.mark.parametrize("kind", sorted(SHORT_NAMES))
def test_crd_is_a_valid_kubernetes_object(kind: str) -> None:
    kubernetes_validate.validate(CRDS[kind], K8S_VERSION, strict=True)


def _is_structural(schema: dict[str, Any], path: str = "") -> list[str]:
    """Where the schema breaks Kubernetes' structural-schema rules (a type on every node)."""
    bad: list[str] = []
    untyped_allowed = schema.get("x-kubernetes-int-or-string") or schema.get(
        "x-kubernetes-preserve-unknown-fields"
    )
    if "type" not in schema and not untyped_allowed:
        bad.append(path or ".")
    for name, prop in schema.get("properties", {}).items():
        bad += _is_structural(prop, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        bad += _is_structural(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        bad += _is_structural(schema["additionalProperties"], f"{path}{{}}")
    return bad


@pytest.mark.parametrize("kind", sorted(SHORT_NAMES))
def test_schema_is_structural(kind: str) -> None:
    schema = CRDS[kind]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert _is_structural(schema) == []


@pytest.mark.parametrize("path", sorted(EXAMPLES_DIR.glob("*.yaml")), ids=lambda p: p.name)
def test_good_examples_are_admitted(path: Path) -> None:
    for doc in _docs(path):
        _, violations = admit(CRDS[doc["kind"]], doc)
        assert violations == []


def test_replica_counts_alone_make_a_cluster_and_defaults_fill_the_rest() -> None:
    (doc,) = _docs(EXAMPLES_DIR / "pulsarcluster-minimal.yaml")
    assert set(doc["spec"]) == {"bookies", "brokers"}
    stored, violations = admit(CRDS["PulsarCluster"], doc)
    assert violations == []
    spec = stored["spec"]
    assert spec["metadataStore"]["mode"] == "Managed"
    assert spec["metadataStore"]["etcd"]["replicas"] == 3
    assert spec["bookies"]["journal"]["size"] == "10Gi"
    assert spec["bookies"]["retainVolumesOnDelete"] is True
    assert spec["brokers"]["defaults"] == {"ensembleSize": 2, "writeQuorum": 2, "ackQuorum": 2}
    assert spec["proxy"] == {"enabled": True, "replicas": 1, "serviceType": "ClusterIP",
                             "resources": {}}  # fmt: skip
    assert spec["rollout"] == {"paused": False, "maxUnavailableBookies": 1}
    assert spec["audit"]["enabled"] is False


BAD = sorted(BAD_DIR.glob("*.yaml"))


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.name)
def test_bad_examples_are_refused_by_the_rule_they_break(path: Path) -> None:
    expect = path.read_text().splitlines()[0].removeprefix("# expect: ")
    docs = _docs(path)
    old, new = (None, docs[0]) if len(docs) == 1 else (docs[0], docs[1])
    crd = CRDS[new["kind"]]
    if old is not None:
        assert admit(crd, old)[1] == [], "the stored object of a transition example must be good"
    _, violations = admit(crd, new, old)
    assert [v.message for v in violations if expect in v.message], violations
    assert all(expect in v.message for v in violations), violations  # that rule, no other


def test_every_cel_rule_is_broken_by_some_bad_example() -> None:
    def rules(schema: dict[str, Any]) -> set[str]:
        found = {v["message"] for v in schema.get("x-kubernetes-validations", [])}
        for prop in schema.get("properties", {}).values():
            found |= rules(prop)
        return found

    messages = set().union(*(rules(c["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
                             for c in CRDS.values()))  # fmt: skip
    expected = {p.read_text().splitlines()[0].removeprefix("# expect: ") for p in BAD}
    assert messages - expected == set()


def _cluster(**brokers: Any) -> dict[str, Any]:
    return {
        "apiVersion": "pulsar.magnetar.dev/v1alpha1",
        "kind": "PulsarCluster",
        "metadata": {"name": "c"},
        "spec": {"bookies": {"replicas": 3}, "brokers": {"replicas": 2, **brokers}},
    }


@given(st.integers(1, 9), st.integers(1, 9), st.integers(1, 9))
def test_quorum_rule_is_aq_le_wq_le_e(e: int, wq: int, aq: int) -> None:
    defaults = {"ensembleSize": e, "writeQuorum": wq, "ackQuorum": aq}
    _, violations = admit(CRDS["PulsarCluster"], _cluster(defaults=defaults))
    assert (violations == []) == (aq <= wq <= e)
    namespace = {
        "apiVersion": "pulsar.magnetar.dev/v1alpha1",
        "kind": "Namespace",
        "metadata": {"name": "n"},
        "spec": {"clusterRef": "c", "tenant": "t", "persistence": defaults},
    }
    _, violations = admit(CRDS["Namespace"], namespace)
    assert (violations == []) == (aq <= wq <= e)


@given(st.integers(0, 50), st.integers(0, 50))
def test_partitions_only_grow(old: int, new: int) -> None:
    def topic(partitions: int) -> dict[str, Any]:
        spec = {"clusterRef": "c", "namespace": "t/n", "partitions": partitions}
        return {"apiVersion": "pulsar.magnetar.dev/v1alpha1", "kind": "Topic",
                "metadata": {"name": "x"}, "spec": spec}  # fmt: skip

    _, violations = admit(CRDS["Topic"], topic(new), topic(old))
    allowed = new == 0 if old == 0 else new >= old
    assert (violations == []) == allowed


@given(
    bookies=st.integers(1, 20),
    brokers=st.integers(1, 20),
    service_type=st.sampled_from(["ClusterIP", "NodePort", "LoadBalancer"]),
    audit=st.booleans(),
)
def test_generated_clusters_are_admitted(
    bookies: int, brokers: int, service_type: str, audit: bool
) -> None:
    doc = _cluster()
    doc["spec"]["bookies"]["replicas"] = bookies
    doc["spec"]["brokers"]["replicas"] = brokers
    doc["spec"]["proxy"] = {"serviceType": service_type}
    doc["spec"]["audit"] = {"enabled": audit}
    stored, violations = admit(CRDS["PulsarCluster"], doc)
    assert violations == []
    assert stored["spec"]["proxy"]["enabled"] is True
