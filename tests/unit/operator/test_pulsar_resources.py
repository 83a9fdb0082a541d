"""Tenant, Namespace and Topic specs read as the Pulsar values they stand for."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from magnetar.policies import PersistencePolicies, RetentionPolicies
from magnetar_operator.pulsar_resources import NamespaceDesired, TenantDesired, TopicDesired
from magnetar_operator.spec import InvalidSpec

META = {"name": "k8s-name"}


def test_names_default_to_the_resource_name() -> None:
    assert TenantDesired.parse({"name": "acme"}, {"clusterRef": "c"}).name == "acme"
    ns = NamespaceDesired.parse({"name": "orders"}, {"clusterRef": "c", "tenant": "acme"})
    assert ns.name == "acme/orders"
    topic = TopicDesired.parse({"name": "in"}, {"clusterRef": "c", "namespace": "acme/orders"})
    assert (topic.name, topic.namespace, topic.partitions) == (
        "persistent://acme/orders/in",
        "acme/orders",
        0,
    )


def test_unset_settings_are_not_managed() -> None:
    ns = NamespaceDesired.parse(META, {"clusterRef": "c", "tenant": "t", "name": "n"})
    assert (ns.retention, ns.message_ttl_s, ns.backlog_quota, ns.deduplication) == (
        None,
        None,
        None,
        None,
    )
    full = NamespaceDesired.parse(
        META,
        {
            "clusterRef": "c",
            "tenant": "t",
            "name": "n",
            "retention": {"timeInMinutes": 5, "sizeInMB": -1},
            "persistence": {"ensembleSize": 3, "writeQuorum": 2, "ackQuorum": 2},
            "replicationClusters": ["east", "west"],
        },
    )
    assert full.retention == RetentionPolicies(5, -1)
    assert full.persistence == PersistencePolicies(3, 2, 2)
    assert full.replication_clusters == frozenset({"east", "west"})
    assert (ns.persistence, ns.replication_clusters, ns.removed) == (None, None, ())


def test_settings_an_update_takes_out_are_removed() -> None:
    before = {
        "clusterRef": "c",
        "tenant": "t",
        "retention": {"timeInMinutes": 5, "sizeInMB": -1},
        "messageTTLSeconds": 60,
        "persistence": {"ensembleSize": 1, "writeQuorum": 1, "ackQuorum": 1},
        "replicationClusters": ["east"],
    }
    after = {"clusterRef": "c", "tenant": "t", "messageTTLSeconds": 30}
    ns = NamespaceDesired.parse(META, after, before)
    assert ns.removed == ("retention", "persistence", "replicationClusters")
    assert NamespaceDesired.parse(META, before, after).removed == ()
    assert NamespaceDesired.parse(META, after).removed == ()  # no update: nothing removed


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("persistence", {"ensembleSize": 1, "writeQuorum": 2, "ackQuorum": 1}, r"Ensemble \(1\)"),
        ("persistence", {"ensembleSize": 2, "writeQuorum": 2}, "Bookkeeper-AckQuorum"),
        ("replicationClusters", [], "at least one cluster"),
    ],
)
def test_bad_namespace_policies_are_invalid_specs(field: str, value: object, reason: str) -> None:
    with pytest.raises(InvalidSpec, match=reason) as raised:
        NamespaceDesired.parse(META, {"clusterRef": "c", "tenant": "t", field: value})
    assert f"spec.{field}" in str(raised.value)


def test_the_tenant_is_allowed_on_its_cluster_unless_told_otherwise() -> None:
    tenant = TenantDesired.parse(META, {"clusterRef": "c", "adminRoles": ["a"]})
    assert tenant.info("prod").allowed_clusters == frozenset({"prod"})
    other = TenantDesired.parse(META, {"clusterRef": "c", "allowedClusters": ["x", "y"]})
    assert other.info("prod").allowed_clusters == frozenset({"x", "y"})


@pytest.mark.parametrize(
    ("kind", "spec"),
    [
        (NamespaceDesired, {"tenant": "t", "name": "bad name"}),
        (NamespaceDesired, {"tenant": "", "name": "n"}),
        (TopicDesired, {"namespace": "no-slash", "name": "x"}),
        (TopicDesired, {"namespace": "t/n", "name": "x", "partitions": -1}),
        (TenantDesired, {"name": "a/b"}),
    ],
)
def test_invalid_names_are_invalid_specs(kind: type, spec: dict[str, object]) -> None:
    with pytest.raises(InvalidSpec):
        kind.parse(META, {"clusterRef": "c", **spec})


@given(
    local=st.from_regex(r"[a-zA-Z0-9_=:.-]{1,20}", fullmatch=True),
    persistent=st.booleans(),
    partitions=st.integers(0, 64),
)
def test_topic_names_round_trip(local: str, persistent: bool, partitions: int) -> None:
    topic = TopicDesired.parse(
        META,
        {
            "clusterRef": "c",
            "namespace": "t/n",
            "name": local,
            "persistent": persistent,
            "partitions": partitions,
        },
    )
    domain = "persistent" if persistent else "non-persistent"
    assert topic.name == f"{domain}://t/n/{local}"
    assert topic.partitions == partitions
