"""The admin app's guard and permission routes, in-process: 401 with its scheme, 403 by role,
topic grants and subscription roles stored in Pulsar's shape."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator

import httpx
import pytest

from magnetar.admin import create_app
from magnetar.authentication import AuthenticationConfig
from magnetar.authentication.jwt_tokens import create_token, signing_key
from magnetar.broker.security import BrokerSecurity, SecurityConfig
from tests.unit.admin.fake_broker import FakeTopicService

SECRET = bytes(range(32))
CONFIG = SecurityConfig(
    authentication_enabled=True,
    authorization_enabled=True,
    authentication=AuthenticationConfig(
        ("token",), token_secret_key="data:;base64," + base64.b64encode(SECRET).decode()
    ),
    super_user_roles=frozenset({"root"}),
)
TOPIC = "/admin/v2/persistent/acme/orders/t"


def bearer(role: str) -> dict[str, str]:
    return {"Authorization": "Bearer " + create_token(signing_key(SECRET, "HS256"), role)}


@pytest.fixture
async def secured(broker: FakeTopicService) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(broker, security=BrokerSecurity(CONFIG, broker.resources))
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(
        transport=transport, base_url="http://127.0.0.1:8080", timeout=10
    ) as client:
        root = bearer("root")
        assert (
            await client.put("/admin/v2/clusters/standalone", json={}, headers=root)
        ).status_code == 204
        body = {"adminRoles": ["boss"], "allowedClusters": ["standalone"]}
        assert (
            await client.put("/admin/v2/tenants/acme", json=body, headers=root)
        ).status_code == 204
        yield client


async def test_401_names_the_bearer_scheme(secured: httpx.AsyncClient) -> None:
    for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": "Basic x"}):
        response = await secured.get("/admin/v2/tenants", headers=headers)
        assert response.status_code == 401
        assert response.headers["WWW-Authenticate"] == "Bearer"
        assert response.json()["reason"]
    assert (await secured.get("/admin/v2/brokers/health")).status_code != 401


async def test_tenant_admin_grants_on_topics_and_subscriptions(secured: httpx.AsyncClient) -> None:
    boss, app = bearer("boss"), bearer("app")
    assert (await secured.put("/admin/v2/namespaces/acme/orders", headers=app)).status_code == 403
    assert (await secured.put("/admin/v2/namespaces/acme/orders", headers=boss)).status_code == 204
    grant = await secured.post(TOPIC + "/permissions/app", json=["consume"], headers=boss)
    assert grant.status_code == 204
    bad = await secured.post(TOPIC + "/permissions/app", json=["fly"], headers=boss)
    assert bad.status_code == 412
    ns_grant = "/admin/v2/namespaces/acme/orders/permissions/app"
    assert (await secured.post(ns_grant, json=["produce"], headers=boss)).status_code == 204
    listed = await secured.get(TOPIC + "/permissions", headers=boss)
    assert listed.json() == {"app": ["consume", "produce"]}
    subs = "/admin/v2/namespaces/acme/orders/permissions/subscription"
    assert (
        await secured.post(subs + "/billing", json=["app", "b"], headers=boss)
    ).status_code == 204
    assert (await secured.get(subs, headers=boss)).json() == {"billing": ["app", "b"]}
    revoke_sub = "/admin/v2/namespaces/acme/orders/permissions/billing/app"
    assert (await secured.delete(revoke_sub, headers=boss)).status_code == 204
    assert (await secured.get(subs, headers=boss)).json() == {"billing": ["b"]}
    policies = (await secured.get("/admin/v2/namespaces/acme/orders", headers=boss)).json()
    assert policies["auth_policies"]["destination_auth"] == {
        "persistent://acme/orders/t": {"app": ["consume"]}
    }
    assert (await secured.delete(TOPIC + "/permissions/app", headers=boss)).status_code == 204
    again = await secured.delete(TOPIC + "/permissions/app", headers=boss)
    assert again.status_code == 412
    assert (await secured.get(TOPIC + "/permissions", headers=app)).status_code == 403
