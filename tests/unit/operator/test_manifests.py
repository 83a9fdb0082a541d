"""The manifest builders: every object they render is a valid Kubernetes object (strict, for a
current Kubernetes), for the examples and for generated specs; names, ids and hashes behave."""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from magnetar_operator import annotations as ann
from magnetar_operator.manifests import Obj, Stage, cluster_objects, spec_hash
from magnetar_operator.names import bookie_id, bookie_ordinal, metadata_url
from magnetar_operator.spec import ClusterSpec, InvalidSpec
from tests.kit.crd import EXAMPLES_DIR, admit, load_crds
from tests.kit.kube import validate_certificate  # importing tests.kit.kube caches schema files

K8S_VERSION = "1.30.0"
CRDS = load_crds()


def _example(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((EXAMPLES_DIR / f"{name}.yaml").read_text())
    return doc


def _spec(doc: dict[str, Any], annotations: dict[str, str] | None = None) -> ClusterSpec:
    return ClusterSpec.parse(doc["metadata"]["name"], "pulsar", doc["spec"], annotations)


def _all(objects: dict[Stage, list[Obj]]) -> list[Obj]:
    return [obj for stage in Stage for obj in objects[stage]]


def _validate(obj: Obj) -> None:
    if obj["kind"] == "ScheduledSparkApplication":  # a CRD of the spark-operator
        template = obj["spec"]["template"]
        assert obj["spec"]["concurrencyPolicy"] == "Forbid"
        for key in ("type", "sparkVersion", "mainApplicationFile", "driver", "executor"):
            assert key in template, key
        return
    if obj["kind"] == "Certificate":  # a CRD of cert-manager
        validate_certificate(obj)
        return
    kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


@pytest.mark.parametrize("name", ["pulsarcluster-minimal", "pulsarcluster-full"])
def test_example_clusters_render_valid_objects(name: str) -> None:
    spec = _spec(_example(name), {ann.MANUAL_ROLL: "2026-01-01"})
    objects = _all(cluster_objects(spec))
    assert objects
    for obj in objects:
        _validate(obj)
        assert obj["metadata"]["namespace"] == "pulsar"
        assert obj["metadata"]["labels"][ann.INSTANCE] == spec.name


def test_the_validator_refuses_a_broken_object() -> None:
    """A control: strict validation is not a no-op."""
    spec = _spec(_example("pulsarcluster-minimal"))
    statefulset = cluster_objects(spec)[Stage.BOOKIES][-1]
    statefulset["spec"]["replica"] = 3
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(statefulset, K8S_VERSION, strict=True)


def test_code_defaults_match_the_crd_defaults() -> None:
    """The operator reads an undefaulted spec (an API mock, an old CRD) as the API server's
    defaulted one."""
    for name in ("pulsarcluster-minimal", "pulsarcluster-full"):
        doc = _example(name)
        stored, violations = admit(CRDS["PulsarCluster"], doc)
        assert violations == []
        assert _spec(doc) == _spec(stored)


def test_minimal_cluster_children() -> None:
    objects = cluster_objects(_spec(_example("pulsarcluster-minimal")))
    kinds = {stage: [o["kind"] for o in objs] for stage, objs in objects.items()}
    assert kinds[Stage.ETCD] == ["Service", "PodDisruptionBudget", "StatefulSet"]
    assert kinds[Stage.INIT] == ["Job"]
    assert kinds[Stage.BOOKIES] == ["ConfigMap", "Service", "PodDisruptionBudget", "StatefulSet"]
    assert kinds[Stage.BROKERS] == ["ConfigMap", "Service", "PodDisruptionBudget", "Deployment"]
    assert kinds[Stage.FRONT] == ["Service", "PodDisruptionBudget", "Deployment", "Deployment"]
    assert kinds[Stage.AUDIT] == []
    bookies = objects[Stage.BOOKIES][-1]["spec"]
    assert bookies["replicas"] == 3
    assert [c["metadata"]["name"] for c in bookies["volumeClaimTemplates"]] == [
        "journal",
        "ledgers",
    ]
    assert bookies["persistentVolumeClaimRetentionPolicy"]["whenScaled"] == "Retain"
    (bookie,) = bookies["template"]["spec"]["containers"]
    assert bookie["readinessProbe"]["httpGet"] == {"path": "/api/v1/bookie/is_ready", "port": 8000}
    assert bookie["args"][0] == "bookie"
    headless = objects[Stage.BOOKIES][1]["spec"]
    assert headless["clusterIP"] == "None"
    assert headless["publishNotReadyAddresses"] is True
    broker = objects[Stage.BROKERS][-1]["spec"]["template"]["spec"]
    (container,) = broker["containers"]
    assert {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}} in (
        container["env"]
    )
    assert container["args"][container["args"].index("--advertised-address") + 1] == "$(POD_IP)"
    assert container["readinessProbe"]["httpGet"]["path"] == "/admin/v2/brokers/health"
    assert container["lifecycle"]["preStop"]
    assert broker["terminationGracePeriodSeconds"] == 60


def test_full_example_audit_and_proxy_service() -> None:
    objects = cluster_objects(_spec(_example("pulsarcluster-full")))
    assert [o["kind"] for o in objects[Stage.AUDIT]] == [
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "ScheduledSparkApplication",
    ]
    proxy_service = objects[Stage.FRONT][0]
    assert proxy_service["spec"]["type"] == "LoadBalancer"
    config = objects[Stage.BROKERS][0]["data"]
    assert config["MAGNETAR_BROKER_CLUSTER_NAME"] == "prod-eu1"
    assert config["MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_ACK_QUORUM"] == "2"
    assert config["MAGNETAR_BROKER_DEFAULT_NUMBER_OF_NAMESPACE_BUNDLES"] == "8"


def test_external_metadata_store_renders_no_etcd() -> None:
    doc = _example("pulsarcluster-minimal")
    doc["spec"]["metadataStore"] = {"mode": "External", "external": {"endpoints": ["e1:2379"]}}
    spec = _spec(doc)
    assert cluster_objects(spec)[Stage.ETCD] == []
    assert metadata_url(spec) == "etcd://e1:2379"


def test_bookie_ids_are_stable_dns_names() -> None:
    spec = _spec(_example("pulsarcluster-minimal"))
    assert bookie_id(spec, 2) == "demo-bookie-2.demo-bookie.pulsar.svc:3181"
    assert bookie_ordinal(spec, bookie_id(spec, 2)) == 2
    assert bookie_ordinal(spec, "10.0.0.1:3181") is None
    assert bookie_ordinal(spec, "other-bookie-2.other-bookie.pulsar.svc:3181") is None


def _hashes(spec: ClusterSpec) -> dict[str, str]:
    return {
        obj["metadata"]["name"]: spec_hash(obj)
        for obj in _all(cluster_objects(spec))
        if obj["kind"] in ("StatefulSet", "Deployment")
    }


def test_hashes_change_with_what_the_pods_run_and_only_then() -> None:
    doc = _example("pulsarcluster-minimal")
    base = _hashes(_spec(doc))
    assert base == _hashes(_spec(doc))  # deterministic
    doc["spec"]["image"] = "magnetar:0.2.0"
    new_image = _hashes(_spec(doc))
    assert base["demo-etcd"] == new_image["demo-etcd"]
    assert all(base[n] != new_image[n] for n in base if n != "demo-etcd")
    doc = _example("pulsarcluster-minimal")
    doc["spec"]["brokers"]["config"] = {"backlog_quota_check_enabled": "false"}
    changed = {n for n, h in _hashes(_spec(doc)).items() if h != base[n]}
    assert changed == {"demo-broker"}
    rolled = _hashes(_spec(_example("pulsarcluster-minimal"), {ann.MANUAL_ROLL: "now"}))
    assert {n for n, h in rolled.items() if h != base[n]} == set(base) - {"demo-etcd"}


def test_a_bad_spec_names_the_field() -> None:
    doc = _example("pulsarcluster-minimal")
    doc["spec"]["brokers"]["defaults"] = {"ensembleSize": 1, "writeQuorum": 2, "ackQuorum": 1}
    with pytest.raises(InvalidSpec, match=r"spec\.brokers\.defaults"):
        _spec(doc)
    doc = _example("pulsarcluster-minimal")
    doc["spec"]["bookies"]["replicas"] = "three"
    with pytest.raises(InvalidSpec, match=r"spec\.bookies\.replicas"):
        _spec(doc)


@given(
    bookies=st.integers(1, 12),
    brokers=st.integers(1, 12),
    etcd=st.sampled_from([1, 3, 5]),
    proxy=st.booleans(),
    autorecovery=st.booleans(),
    audit=st.booleans(),
    service_type=st.sampled_from(["ClusterIP", "NodePort", "LoadBalancer"]),
    anti_affinity=st.sampled_from(["Preferred", "Required", "None"]),
    retain=st.booleans(),
    storage_class=st.one_of(st.none(), st.sampled_from(["fast", "standard"])),
    quorum=st.builds(sorted, st.lists(st.integers(1, 3), min_size=3, max_size=3)).map(
        lambda q: (q[2], q[1], q[0])  # E >= Wq >= Aq
    ),
    partition=st.integers(0, 12),
    tls=st.sampled_from([{}, {"enabled": True, "secretName": "mine"},
                         {"enabled": True, "issuerRef": {"name": "ca", "kind": "ClusterIssuer"}}]),
    auth=st.sampled_from([{}, {"enabled": True}, {"enabled": True, "algorithm": "RS256",
                                                  "tokenSecretName": "k", "superUserRoles": []}]),
)  # fmt: skip
def test_generated_clusters_render_valid_objects(
    bookies: int,
    brokers: int,
    etcd: int,
    proxy: bool,
    autorecovery: bool,
    audit: bool,
    service_type: str,
    anti_affinity: str,
    retain: bool,
    storage_class: str | None,
    quorum: tuple[int, int, int],
    partition: int,
    tls: dict[str, Any],
    auth: dict[str, Any],
) -> None:
    volume: dict[str, Any] = {"size": "5Gi"}
    if storage_class:
        volume["storageClassName"] = storage_class
    e, w, a = quorum
    doc = {
        "metadata": {"name": "gen"},
        "spec": {
            "metadataStore": {"etcd": {"replicas": etcd, "storage": volume}},
            "bookies": {"replicas": bookies, "journal": volume, "retainVolumesOnDelete": retain},
            "brokers": {
                "replicas": brokers,
                "defaults": {"ensembleSize": e, "writeQuorum": w, "ackQuorum": a},
                "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
            },
            "proxy": {"enabled": proxy, "serviceType": service_type},
            "autorecovery": {"enabled": autorecovery},
            "audit": {"enabled": audit},
            "tls": tls,
            "auth": auth,
            "scheduling": {
                "podAntiAffinity": anti_affinity,
                "tolerations": [{"key": "dedicated", "operator": "Exists"}],
                "topologySpreadConstraints": [
                    {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}
                ],
            },
        },
    }
    _, violations = admit(CRDS["PulsarCluster"], {"apiVersion": "pulsar.magnetar.dev/v1alpha1",
                                                  "kind": "PulsarCluster", **doc})  # fmt: skip
    assert violations == []
    objects = cluster_objects(_spec(doc), bookie_partition=min(partition, bookies))
    for obj in _all(objects):
        _validate(obj)
    assert bool(objects[Stage.AUDIT]) == audit
    front = [o["metadata"]["name"] for o in objects[Stage.FRONT] if o["kind"] == "Deployment"]
    assert ("gen-proxy" in front) == proxy
    assert ("gen-autorecovery" in front) == autorecovery
