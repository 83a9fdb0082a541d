"""TopicName / NamespaceName parsing: full and short forms, partition suffixes, the managed
ledger name, and invalid names (InvalidTopicName with a reason); the views of the admin client
(shape only) and of the protocol client (legacy four-part names, partition names)."""

from __future__ import annotations

import pytest

from magnetar.naming import (
    InvalidTopicName,
    NamespaceName,
    TopicName,
    client_topic_name,
    full_topic_name,
    partition_name,
)


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


@pytest.mark.parametrize(
    ("text", "full", "path"),
    [
        ("my-topic", "persistent://public/default/my-topic", "persistent/public/default/my-topic"),
        ("acme/orders/in", "persistent://acme/orders/in", "persistent/acme/orders/in"),
        ("non-persistent://a/b/c", "non-persistent://a/b/c", "non-persistent/a/b/c"),
        ("a/b/c d", "persistent://a/b/c d", "persistent/a/b/c%20d"),
        ("a/b/x/y", "persistent://a/b/x/y", "persistent/a/b/x%2Fy"),
    ],
)
def test_topic_names_as_pulsar_admin_takes_them(text: str, full: str, path: str) -> None:
    ref = TopicName.parse(text, strict=False)
    assert str(ref) == full
    assert ref.rest_path == path


@pytest.mark.parametrize("text", ["", "a/b", "a//c", "kafka://a/b/c", "persistent://a/b"])
def test_bad_topic_names_for_pulsar_admin(text: str) -> None:
    with pytest.raises(ValueError):
        TopicName.parse(text, strict=False)


def test_namespaces_as_pulsar_admin_takes_them() -> None:
    assert str(NamespaceName.parse("acme/orders", strict=False)) == "acme/orders"
    for bad in ("acme", "acme/", "a/b/c"):
        with pytest.raises(ValueError, match="tenant/namespace"):
            NamespaceName.parse(bad, strict=False)


def test_the_admin_view_is_the_client_parser_without_the_legacy_form() -> None:
    legacy = client_topic_name("persistent://a/b/x/y")
    assert (legacy.namespace_local, legacy.local_name) == ("b/x", "y")
    assert str(legacy) == "persistent://a/b/x/y"
    ref = TopicName.parse("persistent://a/b/x/y", strict=False)
    assert (ref.namespace_local, ref.local_name) == ("b", "x/y")
    assert ref == TopicName.parse("persistent://a/b/x/y", legacy_cluster=False)
    with pytest.raises(InvalidTopicName):  # a ValueError too, for the CLI's usage errors
        TopicName.parse("kafka://a/b/c", strict=False)


def test_clients_check_the_shape_and_leave_characters_to_the_broker() -> None:
    with pytest.raises(InvalidTopicName, match="invalid tenant name 'ac me'"):
        TopicName.parse("ac me/orders/t")
    assert str(TopicName.parse("ac me/orders/t", strict=False)) == "persistent://ac me/orders/t"
    assert full_topic_name("ac me/orders/t") == "persistent://ac me/orders/t"
    assert str(NamespaceName.parse("public/bad$name", strict=False)) == "public/bad$name"
    for bad in ("", "acme/t", "kafka://a/b/c", "a//c"):
        with pytest.raises(ValueError):
            full_topic_name(bad)


def test_client_partition_names() -> None:
    assert full_topic_name("t") == "persistent://public/default/t"
    assert partition_name("t", 2) == "persistent://public/default/t-partition-2"
    assert client_topic_name(partition_name("a/b/t", 7)).partition_index == 7
    assert (
        partition_name("t-partition-1", 0)
        == "persistent://public/default/t-partition-1-partition-0"
    )
    with pytest.raises(InvalidTopicName, match="negative partition index"):
        partition_name("t", -1)
