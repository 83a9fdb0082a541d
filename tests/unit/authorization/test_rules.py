"""Pulsar's authorization rules: super-users, tenant admins, grants, subscriptions, proxies."""

from __future__ import annotations

from magnetar.authorization import (
    CONSUME,
    LOOKUP,
    PRODUCE,
    AuthorizationRules,
    Caller,
    may_administer_tenant,
    may_use_namespace,
    may_use_topic,
)
from magnetar.naming import NamespaceName, TopicName
from magnetar.policies import AuthPolicies, TenantInfo

RULES = AuthorizationRules(frozenset({"root"}), frozenset({"proxy"}))
TOPIC = TopicName.parse("persistent://acme/orders/t")
TENANT = TenantInfo(admin_roles=frozenset({"acme-admin"}))
AUTH = AuthPolicies(
    namespace_auth={"writer": frozenset({PRODUCE}), "proxy": frozenset({PRODUCE, CONSUME})},
    destination_auth={"persistent://acme/orders/t": {"reader": frozenset({CONSUME})}},
    subscription_auth_roles={"billing": frozenset({"billing-app"})},
)


def may(role: str, action: str, *, original: str | None = None, sub: str | None = None) -> bool:
    caller = Caller(role, original)
    return may_use_topic(RULES, caller, action, TOPIC, tenant=TENANT, auth=AUTH, subscription=sub)


def test_super_user_and_tenant_admin_may_everything() -> None:
    for role in ("root", "acme-admin"):
        assert may(role, PRODUCE)
        assert may(role, CONSUME, sub="billing")
        assert may(role, LOOKUP)
    assert may_administer_tenant(RULES, Caller("acme-admin"), TENANT)
    assert not may_administer_tenant(RULES, Caller("writer"), TENANT)
    assert may_administer_tenant(RULES, Caller("root"), None)


def test_grants_by_action() -> None:
    assert may("writer", PRODUCE)
    assert not may("writer", CONSUME)
    assert may("writer", LOOKUP)
    assert may("reader", CONSUME)
    assert not may("reader", PRODUCE)
    assert may("reader", LOOKUP)
    assert not may("stranger", LOOKUP)


def test_topic_grant_covers_its_partitions_not_other_topics() -> None:
    partition = TopicName.parse("persistent://acme/orders/t-partition-2")
    other = TopicName.parse("persistent://acme/orders/u")
    caller = Caller("reader")
    assert may_use_topic(RULES, caller, CONSUME, partition, tenant=TENANT, auth=AUTH)
    assert not may_use_topic(RULES, caller, CONSUME, other, tenant=TENANT, auth=AUTH)


def test_subscription_roles_restrict_consumers() -> None:
    assert not may("reader", CONSUME, sub="billing")
    assert may("reader", CONSUME, sub="any-other")


def test_proxy_needs_both_roles_allowed() -> None:
    assert may("proxy", PRODUCE, original="writer")
    assert not may("proxy", CONSUME, original="writer")
    assert RULES.proxy_problem("proxy", None) is None  # a lookup link: acts as itself
    assert RULES.proxy_problem("proxy", "proxy") is not None
    assert RULES.proxy_problem("writer", "root") is not None
    assert RULES.proxy_problem("proxy", "writer") is None
    assert RULES.proxy_problem("writer", None) is None


def test_namespace_lookup_needs_a_namespace_grant() -> None:
    ns = NamespaceName.parse("acme/orders")
    assert may_use_namespace(RULES, Caller("writer"), LOOKUP, ns, tenant=TENANT, auth=AUTH)
    assert not may_use_namespace(RULES, Caller("reader"), LOOKUP, ns, tenant=TENANT, auth=AUTH)


def test_auth_policies_round_trip_in_pulsars_shape() -> None:
    doc = AUTH.to_json()
    assert doc["destination_auth"] == {"persistent://acme/orders/t": {"reader": ["consume"]}}
    assert doc["subscription_auth_roles"] == {"billing": ["billing-app"]}
    assert AuthPolicies.from_json(doc) == AUTH
    revoked = AUTH.without_topic_grant("persistent://acme/orders/t", "reader")
    assert revoked.destination_auth == {}
