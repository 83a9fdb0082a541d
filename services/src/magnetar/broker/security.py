"""The broker's security: its authentication service and the authorization checks, over the
tenant and namespace policies in the metadata store (Pulsar's ``AuthorizationService``).

:class:`SecurityConfig` is the broker.conf part (``authentication_enabled``,
``authorization_enabled``, ``super_user_roles``, ``proxy_roles``, the token keys ...).
:class:`BrokerSecurity` builds the authentication providers once (reading the keys: blocking,
at start-up) and answers the checks of the binary protocol and the admin API: each ``check_*``
returns when the caller may, and raises :class:`~magnetar.authorization.NotAuthorized` (or the
resource's not-found error) when not. With authorization disabled (or no caller: authentication
disabled) every check passes. The decisions are the pure rules of :mod:`magnetar.authorization`;
this module only loads the TenantInfo and Policies they read (one metadata read each, no cache).

Authentication outcomes are counted here (``accepted``, ``refused``) and exported by
:func:`observe_authentication` as ``pulsar_authentication_success_total`` and
``pulsar_authentication_failures_total``.

Concurrency: on the broker's loop; its only state is the configuration and those counters.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from magnetar.authentication import (
    AuthenticationConfig,
    AuthenticationFailed,
    AuthenticationService,
    CredentialExpired,
)
from magnetar.authentication import build_authentication as _build_authentication
from magnetar.authorization import (
    AuthorizationRules,
    Caller,
    NotAuthorized,
    may_administer_tenant,
    may_use_namespace,
    may_use_topic,
)
from magnetar.broker.errors import NamespaceNotFound, TenantNotFound
from magnetar.broker.resources import BrokerResources
from magnetar.naming import NamespaceName, TopicName
from magnetar.policies import AuthPolicies, TenantInfo
from magnetar.telemetry import metric_names as names
from magnetar.telemetry.metrics import Metrics, Sample


@dataclass(frozen=True)
class SecurityConfig:
    authentication_enabled: bool = False
    authorization_enabled: bool = False
    authentication: AuthenticationConfig = field(
        default_factory=lambda: AuthenticationConfig(providers=())
    )
    super_user_roles: frozenset[str] = frozenset()
    proxy_roles: frozenset[str] = frozenset()
    refresh_check_s: float = 60.0  # authenticationRefreshCheckSeconds
    authenticate_metrics_endpoint: bool = False


class BrokerSecurity:
    def __init__(self, config: SecurityConfig, resources: BrokerResources) -> None:
        self.config = config
        self._resources = resources
        self.authentication: AuthenticationService | None = (
            _build_authentication(config.authentication) if config.authentication_enabled else None
        )
        self.rules = AuthorizationRules(config.super_user_roles, config.proxy_roles)
        self.accepted: Counter[str] = Counter()  # by method
        self.refused: Counter[tuple[str, str]] = Counter()  # by (method, reason)

    def count_accepted(self, method: str) -> None:
        self.accepted[method] += 1

    def count_refused(self, method: str | None, exc: AuthenticationFailed) -> None:
        reason = "expired" if isinstance(exc, CredentialExpired) else "invalid"
        self.refused[(method or "none", reason)] += 1

    def _enforced(self, caller: Caller | None) -> Caller | None:
        return caller if self.config.authorization_enabled else None

    async def _tenant(self, tenant: str) -> TenantInfo | None:
        try:
            return await self._resources.get_tenant(tenant)
        except TenantNotFound:
            return None

    async def _auth_policies(self, ns: NamespaceName) -> AuthPolicies:
        try:
            return (await self._resources.get_policies(ns)).auth_policies
        except NamespaceNotFound:
            return AuthPolicies()

    async def check_topic(
        self,
        caller: Caller | None,
        topic: TopicName,
        action: str,
        subscription: str | None = None,
    ) -> None:
        """``action`` is ``produce``, ``consume`` (with the subscription) or ``lookup``."""
        who = self._enforced(caller)
        if who is None or self.rules.is_super_user(who):
            return
        tenant = await self._tenant(topic.namespace.tenant)
        auth = await self._auth_policies(topic.namespace)
        if not may_use_topic(
            self.rules, who, action, topic, tenant=tenant, auth=auth, subscription=subscription
        ):
            on = f"subscription {subscription!r} of {topic}" if subscription else str(topic)
            raise NotAuthorized(f"{who.describe()} is not authorized to {action} on {on}")

    async def check_namespace(self, caller: Caller | None, ns: NamespaceName, action: str) -> None:
        who = self._enforced(caller)
        if who is None or self.rules.is_super_user(who):
            return
        tenant = await self._tenant(ns.tenant)
        auth = await self._auth_policies(ns)
        if not may_use_namespace(self.rules, who, action, ns, tenant=tenant, auth=auth):
            raise NotAuthorized(f"{who.describe()} is not authorized to {action} on namespace {ns}")

    async def check_tenant_admin(self, caller: Caller | None, tenant: str) -> None:
        who = self._enforced(caller)
        if who is None or self.rules.is_super_user(who):
            return
        if not may_administer_tenant(self.rules, who, await self._tenant(tenant)):
            raise NotAuthorized(
                f"{who.describe()} is not a super-user nor an admin of tenant {tenant}"
            )

    async def still_allowed(
        self, caller: Caller | None, topic: TopicName, action: str, subscription: str | None
    ) -> bool:
        """Whether a client connected earlier may still ``action`` (after a policy change)."""
        try:
            await self.check_topic(caller, topic, action, subscription)
        except NotAuthorized:
            return False
        return True

    def check_super_user(self, caller: Caller | None) -> None:
        who = self._enforced(caller)
        if who is not None and not self.rules.is_super_user(who):
            raise NotAuthorized(f"{who.describe()} is not a super-user")


def observe_authentication(metrics: Metrics, security: BrokerSecurity, cluster: str) -> None:
    """Export the authentication counters (Pulsar's metric names) on ``metrics``."""
    metrics.observe(
        names.PULSAR_AUTHENTICATION_SUCCESS,
        lambda: [
            Sample(n, {"cluster": cluster, "auth_method": method})
            for method, n in sorted(security.accepted.items())
        ],
    )
    metrics.observe(
        names.PULSAR_AUTHENTICATION_FAILURES,
        lambda: [
            Sample(n, {"cluster": cluster, "auth_method": method, "reason": reason})
            for (method, reason), n in sorted(security.refused.items())
        ],
    )
