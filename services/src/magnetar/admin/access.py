"""What each admin and lookup route requires of its caller: a pure table (Pulsar's checks).

:func:`required_access` maps a request — its method, its (decoded) path as the router matched
it, and the route's path parameters — to one :data:`Access`. Literal segments are read by
position (``/admin/v2/<group>/...``, the verb after a topic); names come from the parameters:

- :class:`Open`: no credential (the health probe, and ``/metrics`` unless
  ``authenticate_metrics_endpoint``);
- :class:`AnyRole`: any authenticated role (reading clusters; ``/metrics`` when authenticated);
- :class:`SuperUser`: tenants' creation and deletion, clusters' changes, brokers, bookies;
- :class:`TenantAdmin`: a tenant's namespaces, their policies and permissions, creating,
  deleting, unloading, terminating and compacting its topics, schema changes;
- :class:`TopicAccess`: ``lookup`` (produce or consume) for stats, metadata and lookups,
  ``consume`` for reading messages and changing subscriptions (with the subscription);
- :class:`NamespaceAccess`: ``lookup`` on a namespace to list its topics.

A route the table does not know requires a super-user (default deny). Tenant admins and
super-users pass every topic and namespace check too (see :mod:`magnetar.authorization.rules`).
Pure; called by :mod:`magnetar.admin.security` for each request.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from magnetar.authorization import CONSUME, LOOKUP
from magnetar.naming import NamespaceName, TopicName


@dataclass(frozen=True)
class Open:
    pass


@dataclass(frozen=True)
class AnyRole:
    pass


@dataclass(frozen=True)
class SuperUser:
    pass


@dataclass(frozen=True)
class TenantAdmin:
    tenant: str


@dataclass(frozen=True)
class TopicAccess:
    topic: TopicName
    action: str
    subscription: str | None = None


@dataclass(frozen=True)
class NamespaceAccess:
    namespace: NamespaceName
    action: str


Access = Open | AnyRole | SuperUser | TenantAdmin | TopicAccess | NamespaceAccess

_OPEN_PATHS = frozenset({"/admin/v2/brokers/health"})
_DOMAINS = ("persistent", "non-persistent")
# Topic sub-resources (the part after {topic}) that only read what lookup rights show.
_TOPIC_READS = frozenset(
    {"", "partitions", "stats", "partitioned-stats", "internalStats", "subscriptions",
     "lastMessageId", "compaction"}
)  # fmt: skip
# ... and those that read messages or move a subscription: consume.
_TOPIC_CONSUME = frozenset(
    {"subscription", "all_subscription", "examinemessage", "ledger"}
)  # fmt: skip
_SCHEMA_READS = frozenset({"schema", "schemas", "compatibility", "version"})


def required_access(
    method: str,
    path: str,
    params: Mapping[str, str],
    *,
    metrics_authenticated: bool = False,
) -> Access:
    """The access a request needs (see the module docstring)."""
    if path in _OPEN_PATHS:
        return Open()
    if path == "/metrics":
        return AnyRole() if metrics_authenticated else Open()
    parts = path.strip("/").split("/")
    reading = method.upper() in ("GET", "HEAD")
    if parts[:3] == ["lookup", "v2", "topic"]:
        return TopicAccess(_topic(params["domain"], params), LOOKUP)
    if parts[:2] != ["admin", "v2"] or len(parts) < 3:
        return SuperUser()
    group, rest = parts[2], parts[3:]
    if group == "clusters":
        return AnyRole() if reading else SuperUser()
    if group == "tenants":
        return TenantAdmin(params["tenant"]) if rest and reading else SuperUser()
    if group == "namespaces" and "tenant" in params:
        return TenantAdmin(params["tenant"])
    if group in _DOMAINS and "tenant" in params:
        return _topic_access(group, method, rest, params, reading)
    if group == "schemas" and "topic" in params:
        verb = parts[6] if len(parts) > 6 else ""
        if (reading and verb in _SCHEMA_READS) or verb in ("compatibility", "version"):
            return TopicAccess(_topic("persistent", params), LOOKUP)
        return TenantAdmin(params["tenant"])
    return SuperUser()


def _topic_access(
    domain: str, method: str, rest: list[str], params: Mapping[str, str], reading: bool
) -> Access:
    tenant = params["tenant"]
    if "topic" not in params:  # the namespace's topic lists
        ns = NamespaceName.parse(f"{tenant}/{params['namespace']}")
        return NamespaceAccess(ns, LOOKUP) if reading else TenantAdmin(tenant)
    topic = _topic(domain, params)
    verb = rest[3] if len(rest) > 3 else ""
    if verb == "permissions":
        return TenantAdmin(tenant)
    if verb in _TOPIC_CONSUME:
        return TopicAccess(topic, CONSUME, params.get("sub"))
    if reading and verb in _TOPIC_READS:
        return TopicAccess(topic, LOOKUP)
    return TenantAdmin(tenant)


def _topic(domain: str, params: Mapping[str, str]) -> TopicName:
    return TopicName.parse(f"{domain}://{params['tenant']}/{params['namespace']}/{params['topic']}")
