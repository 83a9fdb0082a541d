"""TopicName / NamespaceName parsing: full and short forms, partition suffixes, the managed
ledger name, and invalid names (InvalidTopicName with a reason)."""

from __future__ import annotations

import pytest

from magnetar.broker.errors import InvalidTopicName
from magnetar.broker.names import NamespaceName, TopicName


@pytest.mark.parametrize(
    ("given", "full"),
    [
        ("t", "persistent://public/default/t"),
        ("acme/orders/t", "persistent://acme/orders/t"),
        ("persistent://acme/orders/t", "persistent://acme/orders/t"),
        ("non-persistent://acme/orders/t", "non-persistent://acme/orders/t"),
        ("persistent://acme/orders/a/b", "persistent://acme/orders/a/b"),  # '/' in the local name
        ("acme/orders/x:y=z.w", "persistent://acme/orders/x:y=z.w"),
    ],
)
def test_full_and_short_forms(given: str, full: str) -> None:
    name = TopicName.parse(given)
    assert str(name) == full
    assert TopicName.parse(full) == name


def test_parts() -> None:
    name = TopicName.parse("non-persistent://acme/orders/t")
    assert (name.domain, name.tenant, name.namespace_local, name.local_name) == (
        "non-persistent",
        "acme",
        "orders",
        "t",
    )
    assert name.namespace == NamespaceName("acme", "orders")
    assert not name.is_persistent
    assert TopicName.parse("t").is_persistent


def test_partition_suffix() -> None:
    base = TopicName.parse("persistent://acme/orders/t")
    assert base.partition_index == -1
    assert not base.is_partition
    assert base.partitioned_topic_name == base
    p3 = base.partition(3)
    assert str(p3) == "persistent://acme/orders/t-partition-3"
    assert p3.partition_index == 3
    assert p3.is_partition
    assert p3.partitioned_topic_name == base
    assert p3.partition(1) == base.partition(1)  # a partition's partition is a sibling
    assert TopicName.parse("t-partition-x").partition_index == -1
    with pytest.raises(InvalidTopicName, match="negative partition index"):
        base.partition(-1)


def test_managed_ledger_name() -> None:
    name = TopicName.parse("persistent://acme/orders/a b/c")
    assert name.managed_ledger_name == "acme/orders/persistent/a%20b%2Fc"
    assert TopicName.from_managed_ledger_name(name.managed_ledger_name) == name
    with pytest.raises(InvalidTopicName, match="not a topic's managed ledger name"):
        TopicName.from_managed_ledger_name("acme/orders/t")


@pytest.mark.parametrize(
    ("given", "reason"),
    [
        ("", "empty topic name"),
        ("acme/t", "short names are"),
        ("http://acme/orders/t", "unknown domain 'http'"),
        ("persistent://acme/orders", "expected domain://tenant/namespace/topic"),
        ("persistent://acme/orders/", "empty or blank topic local name"),
        ("persistent://acme/orders/ t", "empty or blank topic local name"),
        ("persistent://ac me/orders/t", "invalid tenant name 'ac me'"),
        ("persistent://acme/or#ders/t", "invalid namespace name 'or#ders'"),
        ("persistent:///orders/t", "invalid tenant name ''"),
    ],
)
def test_invalid_topic_names(given: str, reason: str) -> None:
    with pytest.raises(InvalidTopicName) as raised:
        TopicName.parse(given)
    assert reason in raised.value.reason
    assert repr(given) in str(raised.value)


def test_namespace_names() -> None:
    ns = NamespaceName.parse("acme/orders")
    assert str(ns) == "acme/orders"
    assert str(ns.topic("t")) == "persistent://acme/orders/t"
    assert str(ns.topic("t", persistent=False)) == "non-persistent://acme/orders/t"
    for bad, reason in (
        ("acme", "a namespace is 'tenant/namespace'"),
        ("acme/orders/x", "a namespace is 'tenant/namespace'"),
        ("acme/", "invalid namespace name ''"),
        ("/orders", "invalid tenant name ''"),
        ("ac me/orders", "invalid tenant name"),
    ):
        with pytest.raises(InvalidTopicName) as raised:
            NamespaceName.parse(bad)
        assert reason in raised.value.reason
