"""The admin and lookup API's authentication and authorization, as one app-wide dependency.

With ``authentication_enabled``, every route but the open ones (:mod:`magnetar.admin.access`)
needs ``Authorization: Bearer <token>`` (or, over HTTPS, a client certificate for the ``tls``
provider): a missing or bad credential is a 401 with the reason. With
``authorization_enabled`` the caller's role must then have the route's access: a 403 names the
role and what it lacks. A proxy role may name the client it acts for in Pulsar's
``X-Original-Principal`` header; both roles are then checked.

The TLS listener passes the client certificate (``getpeercert()``'s dict) in the ASGI scope
under :data:`PEER_CERTIFICATE_SCOPE_KEY`; :func:`peer_certificate` is the one place that reads it.

Concurrency: runs in each request's task, before the route's handler.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import Request

from magnetar.admin.access import (
    Access,
    AnyRole,
    NamespaceAccess,
    Open,
    SuperUser,
    TenantAdmin,
    TopicAccess,
    required_access,
)
from magnetar.authentication import AuthenticationFailed, PeerCertificate
from magnetar.authorization import Caller
from magnetar.broker.security import BrokerSecurity

PEER_CERTIFICATE_SCOPE_KEY = "magnetar.peer_certificate"
ORIGINAL_PRINCIPAL_HEADER = "X-Original-Principal"


def peer_certificate(request: Request) -> PeerCertificate | None:
    found: Any = request.scope.get(PEER_CERTIFICATE_SCOPE_KEY)
    return found if isinstance(found, dict) and found else None


def access_guard(security: BrokerSecurity) -> Callable[[Request], Awaitable[None]]:
    """The dependency every route runs first (a no-op without authentication)."""

    async def guard(request: Request) -> None:
        service = security.authentication
        if service is None:
            return
        # The path the router matched (decoded, as routing saw it) and its parameters.
        access = required_access(
            request.method,
            request.scope["path"],
            request.path_params,
            metrics_authenticated=security.config.authenticate_metrics_endpoint,
        )
        if isinstance(access, Open):
            return
        authorization = request.headers.get("authorization")
        try:
            principal = service.authenticate_http(authorization, peer_certificate(request))
        except AuthenticationFailed as exc:
            security.count_refused("token" if authorization else None, exc)
            raise
        security.count_accepted(principal.method)
        original = request.headers.get(ORIGINAL_PRINCIPAL_HEADER) or None
        if original is not None and principal.role not in security.rules.proxy_roles:
            original = None  # only a proxy may speak for someone else
        caller = Caller(principal.role, original)
        request.state.caller = caller
        await enforce(security, caller, access)

    return guard


async def enforce(security: BrokerSecurity, caller: Caller, access: Access) -> None:
    """Raise NotAuthorized unless ``caller`` has ``access``."""
    if isinstance(access, (Open, AnyRole)):
        return
    if isinstance(access, SuperUser):
        security.check_super_user(caller)
    elif isinstance(access, TenantAdmin):
        await security.check_tenant_admin(caller, access.tenant)
    elif isinstance(access, TopicAccess):
        await security.check_topic(caller, access.topic, access.action, access.subscription)
    elif isinstance(access, NamespaceAccess):
        await security.check_namespace(caller, access.namespace, access.action)
