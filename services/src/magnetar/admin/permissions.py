"""Topic permissions and subscription roles: Pulsar's REST paths over the namespace policies.

- ``GET /admin/v2/{persistent|non-persistent}/{tenant}/{namespace}/{topic}/permissions``: role
  -> actions, the namespace's grants merged with the topic's own (as Pulsar answers).
- ``POST .../{topic}/permissions/{role}`` (a JSON list of actions) grants on the topic;
  ``DELETE`` revokes the topic's grant (412 when the role has none at the topic level).
- ``GET /admin/v2/namespaces/{tenant}/{namespace}/permissions/subscription``: subscription ->
  roles; ``POST .../permissions/subscription/{subscription}`` (a JSON list of roles) sets who
  may consume from it; ``DELETE .../permissions/{subscription}/{role}`` takes a role off.

Grants live where Pulsar keeps them, in the namespace's ``auth_policies`` (``destination_auth``,
``subscription_auth_roles``); every change is a compare-and-set through ``set_policies``.
Who may call these: tenant admins and super-users (:mod:`magnetar.admin.access`). This router
must be included before the namespaces router, whose ``permissions/{role}`` would match first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import APIRouter, Body

from magnetar.admin.namespaces import parse_namespace
from magnetar.admin.service import TopicService
from magnetar.authorization import topic_grants
from magnetar.naming import NON_PERSISTENT, PERSISTENT, NamespaceName, TopicName
from magnetar.policies import AuthPolicies, InvalidPolicies, parse_actions

NO_CONTENT = 204
RoleList = Annotated[list[str], Body(examples=[["app", "billing"]])]
ActionList = Annotated[list[str], Body(examples=[["produce", "consume"]])]


async def _change(
    service: TopicService, ns: NamespaceName, fn: Callable[[AuthPolicies], AuthPolicies]
) -> None:
    stored = await service.resources.set_policies(ns, lambda p: p.with_auth(fn(p.auth_policies)))
    await service.policies_changed(ns, stored)


async def _auth_of(service: TopicService, ns: NamespaceName) -> AuthPolicies:
    return (await service.resources.get_policies(ns)).auth_policies


def router(service: TopicService) -> APIRouter:
    resources = service.resources
    api = APIRouter(prefix="/admin/v2", tags=["permissions"])
    sub_route = "/namespaces/{tenant}/{namespace}/permissions/subscription"

    @api.get(sub_route, summary="Get subscription -> roles allowed to consume from it")
    async def get_subscription_roles(tenant: str, namespace: str) -> dict[str, list[str]]:
        auth = await _auth_of(service, await parse_namespace(resources, tenant, namespace))
        return {s: sorted(r) for s, r in sorted(auth.subscription_auth_roles.items())}

    @api.post(sub_route + "/{subscription}", status_code=NO_CONTENT)
    async def grant_subscription(
        tenant: str, namespace: str, subscription: str, body: RoleList
    ) -> None:
        """Only these roles (with ``consume``) may use the subscription."""
        roles = frozenset(r for r in body if r)
        ns = await parse_namespace(resources, tenant, namespace)
        await _change(service, ns, lambda a: a.with_subscription_roles(subscription, roles))

    @api.delete(
        "/namespaces/{tenant}/{namespace}/permissions/{subscription}/{role}",
        status_code=NO_CONTENT,
    )
    async def revoke_subscription(
        tenant: str, namespace: str, subscription: str, role: str
    ) -> None:
        ns = await parse_namespace(resources, tenant, namespace)

        def without(auth: AuthPolicies) -> AuthPolicies:
            roles = auth.subscription_auth_roles.get(subscription, frozenset())
            return auth.with_subscription_roles(subscription, roles - {role})

        await _change(service, ns, without)

    for domain in (PERSISTENT, NON_PERSISTENT):
        api.include_router(_topic_router(service, domain))
    return api


def _topic_router(service: TopicService, domain: str) -> APIRouter:
    resources = service.resources
    api = APIRouter(prefix=f"/{domain}/{{tenant}}/{{namespace}}/{{topic}}/permissions")

    async def topic_of(tenant: str, namespace: str, topic: str) -> TopicName:
        name = TopicName.parse(f"{domain}://{tenant}/{namespace}/{topic}")
        await parse_namespace(resources, tenant, namespace)
        return name

    @api.get("", name=f"get_{domain}_permissions")
    async def get_permissions(tenant: str, namespace: str, topic: str) -> dict[str, list[str]]:
        """Role -> actions on the topic (the namespace's grants included)."""
        name = await topic_of(tenant, namespace, topic)
        grants = topic_grants(await _auth_of(service, name.namespace), name)
        return {role: sorted(actions) for role, actions in sorted(grants.items())}

    @api.post("/{role}", status_code=NO_CONTENT, name=f"grant_{domain}_permission")
    async def grant(tenant: str, namespace: str, topic: str, role: str, body: ActionList) -> None:
        """Grant actions on the topic (produce, consume, functions, ...)."""
        name = await topic_of(tenant, namespace, topic)
        actions = parse_actions(body)
        await _change(
            service, name.namespace, lambda a: a.with_topic_grant(str(name), role, actions)
        )

    @api.delete("/{role}", status_code=NO_CONTENT, name=f"revoke_{domain}_permission")
    async def revoke(tenant: str, namespace: str, topic: str, role: str) -> None:
        """Revoke the topic-level grant of a role."""
        name = await topic_of(tenant, namespace, topic)

        def without(auth: AuthPolicies) -> AuthPolicies:
            if role not in auth.destination_auth.get(str(name), {}):
                raise InvalidPolicies("Permissions are not set at the topic level")
            return auth.without_topic_grant(str(name), role)

        await _change(service, name.namespace, without)

    return api
