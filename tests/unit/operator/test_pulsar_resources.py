"""Tenant, Namespace and Topic specs read as the Pulsar values they stand for."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from magnetar.policies import RetentionPolicies
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
        },
    )
    assert full.retention == RetentionPolicies(5, -1)
    assert full.unsupported == ("persistence",)


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
