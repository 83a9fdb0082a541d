"""Any values the schema accepts render objects Kubernetes accepts (Hypothesis over values).

The strategy draws from the documented value space (names, namespace lists, replica counts,
image references, scheduling maps); every draw must pass ``values.schema.json`` and render
objects valid on every Kubernetes version the chart supports.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kit.kube import KUBERNETES_VERSIONS, render_chart, rendered_objects, validate_object

dns_label = st.from_regex(r"\A[a-z]([-a-z0-9]{0,20}[a-z0-9])?\Z")
label_value = st.from_regex(r"\A[A-Za-z0-9]([-A-Za-z0-9_.]{0,10}[A-Za-z0-9])?\Z")
tag = st.from_regex(r"\A[A-Za-z0-9_][A-Za-z0-9_.-]{0,20}\Z")

values_strategy = st.fixed_dictionaries(
    {},
    optional={
        "image": st.fixed_dictionaries(
            {"repository": st.sampled_from(["magnetar", "registry.example:5000/team/magnetar"])},
            optional={
                "tag": tag,
                "pullPolicy": st.sampled_from(["Always", "IfNotPresent", "Never"]),
            },
        ),
        "operator": st.fixed_dictionaries(
            {},
            optional={
                "replicas": st.sampled_from([0, 1]),
                "watchNamespaces": st.lists(dns_label, max_size=1),
                "healthPort": st.integers(1024, 65535),
                "podLabels": st.dictionaries(dns_label, label_value, max_size=2),
                "nodeSelector": st.dictionaries(dns_label, label_value, max_size=2),
            },
        ),
        "serviceAccount": st.fixed_dictionaries(
            {}, optional={"create": st.booleans(), "name": dns_label}
        ),
        "rbac": st.fixed_dictionaries({"create": st.booleans()}),
        "cluster": st.fixed_dictionaries(
            {"enabled": st.booleans()},
            optional={
                "name": dns_label,
                "bookies": st.fixed_dictionaries({"replicas": st.integers(1, 9)}),
                "brokers": st.fixed_dictionaries({"replicas": st.integers(1, 9)}),
            },
        ),
    },
)


@settings(max_examples=25)
@given(values=values_strategy, release=dns_label)
def test_accepted_values_render_valid_objects(values: dict[str, Any], release: str) -> None:
    objects = rendered_objects(render_chart(values, release=release))
    names = [(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objects]
    assert len(names) == len(set(names)), f"two objects share a name: {names}"
    for obj in objects:
        for version in KUBERNETES_VERSIONS:
            validate_object(obj, version)
    deployments = [o for o in objects if o["kind"] == "Deployment"]
    assert len(deployments) == 1
    wanted = values.get("operator", {}).get("replicas", 1)
    assert deployments[0]["spec"]["replicas"] == wanted
    clusters = [o for o in objects if o["kind"] == "PulsarCluster"]
    assert len(clusters) == int(values.get("cluster", {}).get("enabled", False))
