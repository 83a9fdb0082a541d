"""An admin app over a real BrokerResources (memory metadata store) and the broker test double,
driven in-process through httpx's ASGI transport (a unit test of the HTTP layer)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import httpx
import pytest

from magnetar.admin import create_app
from magnetar.broker.resources import BrokerResources
from magnetar.metadata import open_store
from tests.unit.admin.fake_broker import FakeTopicService


@pytest.fixture
async def broker() -> AsyncIterator[FakeTopicService]:
    store = await open_store(f"memory://admin-{uuid.uuid4().hex}")
    yield FakeTopicService(BrokerResources(store))
    await store.close()


@pytest.fixture
async def http(broker: FakeTopicService) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=create_app(broker), raise_app_exceptions=False)
    async with httpx.AsyncClient(
        transport=transport, base_url="http://127.0.0.1:8080", timeout=10
    ) as client:
        yield client


@pytest.fixture
async def ns(http: httpx.AsyncClient) -> str:
    """Cluster ``standalone``, tenant ``acme`` and namespace ``acme/orders``."""
    assert (await http.put("/admin/v2/clusters/standalone", json={})).status_code == 204
    body = {"adminRoles": [], "allowedClusters": ["standalone"]}
    assert (await http.put("/admin/v2/tenants/acme", json=body)).status_code == 204
    assert (await http.put("/admin/v2/namespaces/acme/orders")).status_code == 204
    return "acme/orders"
