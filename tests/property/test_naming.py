"""Hypothesis round-trips of topic and namespace names: ``str`` parses back to the same value,
the managed ledger name maps back to the topic, partitions know their partitioned topic."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from magnetar.naming import DOMAINS, NamespaceName, TopicName, client_topic_name, full_topic_name

part = st.from_regex(r"\A[-=:.a-zA-Z0-9_]{1,12}\Z")
local = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=20
).filter(lambda s: s.strip() == s)


@given(st.sampled_from(DOMAINS), part, part, local)
def test_topic_name_round_trips(domain: str, tenant: str, ns: str, name: str) -> None:
    topic = TopicName.parse(f"{domain}://{tenant}/{ns}/{name}")
    assert TopicName.parse(str(topic)) == topic
    assert topic.namespace == NamespaceName.parse(f"{tenant}/{ns}")
    assert TopicName.from_managed_ledger_name(topic.managed_ledger_name) == topic
    assert topic.managed_ledger_name.count("/") == 3


@given(part, part, local, st.integers(min_value=0, max_value=10_000))
def test_partitions_know_their_topic(tenant: str, ns: str, name: str, index: int) -> None:
    base = TopicName.parse(f"persistent://{tenant}/{ns}/{name}").partitioned_topic_name
    p = base.partition(index)
    assert p.partition_index == index
    assert p.partitioned_topic_name == base
    assert TopicName.parse(str(p)) == p


@given(part, part)
def test_namespace_name_round_trips(tenant: str, ns: str) -> None:
    name = NamespaceName.parse(f"{tenant}/{ns}")
    assert NamespaceName.parse(str(name)) == name


@given(st.sampled_from(DOMAINS), part, part, local.filter(lambda s: "/" not in s))
def test_the_client_views_agree_with_the_broker_on_valid_names(
    domain: str, tenant: str, ns: str, name: str
) -> None:
    full = f"{domain}://{tenant}/{ns}/{name}"
    broker = TopicName.parse(full)
    assert TopicName.parse(full, strict=False) == broker
    assert client_topic_name(full) == broker
    assert full_topic_name(full) == str(broker)
