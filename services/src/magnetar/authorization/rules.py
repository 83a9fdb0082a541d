"""Who may do what: Pulsar's authorization model (``PulsarAuthorizationProvider``), pure.

- A **super-user** (``super_user_roles``) may do everything.
- A **tenant admin** (the tenant's ``adminRoles``) administers the tenant's namespaces and
  topics, and may produce and consume on them.
- Any other role needs a grant of the action (``produce``, ``consume``, ``functions``,
  ``sources``, ``sinks``, ``packages``) on the namespace (``namespace_auth``) or on the topic
  (``destination_auth``; a grant on a partitioned topic covers its partitions). ``lookup`` is
  allowed with ``produce`` or ``consume``. Consuming from a subscription listed in
  ``subscription_auth_roles`` with a non-empty role set also needs the role to be in that set.
- A **proxy** (a role in ``proxy_roles``) acts for the client whose role it forwards as
  ``original_principal``: both the proxy's role and the original role must be allowed (as
  Pulsar checks them). A non-proxy role may not forward another role, and the original role
  may not be a proxy role. Unlike Pulsar, a proxy role may connect without one: the proxy's
  shared lookup connections name the client per request (LOOKUP, PARTITIONED_METADATA), and
  act as the proxy's own role otherwise.

Pure values and functions; the broker's :class:`~magnetar.broker.authorization.BrokerAuthorization`
loads the TenantInfo and Policies they need. Safe from any task.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from magnetar.naming import NamespaceName, TopicName
from magnetar.policies import AuthPolicies, TenantInfo

PRODUCE = "produce"
CONSUME = "consume"
LOOKUP = "lookup"  # not a grantable action: produce or consume
_LOOKUP_ACTIONS = frozenset({PRODUCE, CONSUME})


@dataclass(frozen=True)
class Caller:
    """An authenticated caller: its ``role`` and, behind a proxy, the client's ``original_role``."""

    role: str
    original_role: str | None = None

    def describe(self) -> str:
        if self.original_role is None:
            return f"role {self.role!r}"
        return f"role {self.original_role!r} (through proxy role {self.role!r})"


@dataclass(frozen=True)
class AuthorizationRules:
    super_user_roles: frozenset[str] = frozenset()
    proxy_roles: frozenset[str] = frozenset()

    def is_super_user(self, caller: Caller) -> bool:
        return all(role in self.super_user_roles for role in self.roles_of(caller))

    def roles_of(self, caller: Caller) -> tuple[str, ...]:
        """The roles that must all be allowed: the proxy's and its client's, or the one role."""
        if caller.original_role is not None and caller.role in self.proxy_roles:
            return (caller.role, caller.original_role)
        return (caller.role,)

    def proxy_problem(self, role: str, original_role: str | None) -> str | None:
        """Why ``role`` may not connect forwarding ``original_role`` (Pulsar's rule), or None."""
        if role in self.proxy_roles:
            if original_role and original_role in self.proxy_roles:
                return "the original principal may not be a proxy role"
        elif original_role and original_role != role:
            return f"role {role!r} is not a proxy role and may not forward an original principal"
        return None


def topic_actions(auth: AuthPolicies, topic: TopicName, role: str) -> frozenset[str]:
    """The actions ``role`` holds on ``topic``: namespace grants plus the topic's own (and its
    partitioned topic's, for a partition)."""
    actions = set(auth.namespace_auth.get(role, frozenset()))
    for name in dict.fromkeys((str(topic), str(topic.partitioned_topic_name))):
        actions |= auth.destination_auth.get(name, {}).get(role, frozenset())
    return frozenset(actions)


def topic_grants(auth: AuthPolicies, topic: TopicName) -> dict[str, frozenset[str]]:
    """Role -> actions on ``topic``: the namespace's grants merged with the topic's own."""
    roles = set(auth.namespace_auth)
    for name in (str(topic), str(topic.partitioned_topic_name)):
        roles |= set(auth.destination_auth.get(name, {}))
    return {role: topic_actions(auth, topic, role) for role in roles}


def role_may_use_topic(
    rules: AuthorizationRules,
    role: str,
    action: str,
    topic: TopicName,
    *,
    tenant: TenantInfo | None,
    auth: AuthPolicies,
    subscription: str | None = None,
) -> bool:
    """Whether one role may ``action`` (produce, consume, lookup, ...) on ``topic``."""
    if role in rules.super_user_roles:
        return True
    if tenant is not None and role in tenant.admin_roles:
        return True
    held = topic_actions(auth, topic, role)
    if action == LOOKUP:
        return bool(held & _LOOKUP_ACTIONS)
    if action not in held:
        return False
    if action == CONSUME and subscription is not None:
        allowed = auth.subscription_auth_roles.get(subscription)
        if allowed and role not in allowed:
            return False
    return True


def may_use_topic(
    rules: AuthorizationRules,
    caller: Caller,
    action: str,
    topic: TopicName,
    *,
    tenant: TenantInfo | None,
    auth: AuthPolicies,
    subscription: str | None = None,
) -> bool:
    """Whether ``caller`` (every role of it, see :meth:`AuthorizationRules.roles_of`) may."""
    return all(
        role_may_use_topic(
            rules, role, action, topic, tenant=tenant, auth=auth, subscription=subscription
        )
        for role in rules.roles_of(caller)
    )


def may_use_namespace(
    rules: AuthorizationRules,
    caller: Caller,
    action: str,
    namespace: NamespaceName,
    *,
    tenant: TenantInfo | None,
    auth: AuthPolicies,
) -> bool:
    """Whether ``caller`` may ``action`` on the namespace as a whole (namespace grants only;
    ``lookup``: produce or consume)."""

    def one(role: str) -> bool:
        if role in rules.super_user_roles or (tenant is not None and role in tenant.admin_roles):
            return True
        held = auth.namespace_auth.get(role, frozenset())
        return bool(held & _LOOKUP_ACTIONS) if action == LOOKUP else action in held

    return all(one(role) for role in rules.roles_of(caller))


def may_administer_tenant(
    rules: AuthorizationRules, caller: Caller, tenant: TenantInfo | None
) -> bool:
    """Super-users and the tenant's admin roles administer it."""
    admins: Iterable[str] = () if tenant is None else tenant.admin_roles
    return all(role in rules.super_user_roles or role in admins for role in rules.roles_of(caller))
