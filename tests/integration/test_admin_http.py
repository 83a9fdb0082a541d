"""The admin app served by uvicorn on a loopback port, over real HTTP, with its resources in a
RocksDB metadata store: what was created over HTTP is there after the store is reopened.

Topic operations use the broker test double (``tests.unit.admin.fake_broker``) until the
standalone process serves the admin API; tenants, namespaces and policies are real.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import uvicorn

from magnetar.admin import create_app
from magnetar.broker.resources import BrokerResources
from magnetar.metadata import open_store
from tests.kit.ports import free_port, wait_for_port
from tests.unit.admin.fake_broker import FakeTopicService


@contextlib.asynccontextmanager
async def _serving(url: str, port: int) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the admin app on 127.0.0.1:port over the store at ``url``; all closed on exit."""
    store = await open_store(url)
    app = create_app(FakeTopicService(BrokerResources(store)))
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        await asyncio.to_thread(wait_for_port, port, 10.0)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as http:
            yield http
    finally:
        server.should_exit = True
        async with asyncio.timeout(10):
            await task
        await store.close()


async def test_admin_over_http_persists_in_rocksdb(tmp_path: Path) -> None:
    url = f"rocksdb://{tmp_path / 'metadata'}"
    port = free_port()
    async with _serving(url, port) as http:
        assert (await http.put("/admin/v2/clusters/standalone", json={})).status_code == 204
        tenant = {"adminRoles": [], "allowedClusters": ["standalone"]}
        assert (await http.put("/admin/v2/tenants/public", json=tenant)).status_code == 204
        assert (await http.put("/admin/v2/namespaces/public/default")).status_code == 204
        retention = {"retentionTimeInMinutes": 5, "retentionSizeInMB": 10}
        r = await http.post("/admin/v2/namespaces/public/default/retention", json=retention)
        assert r.status_code == 204
        r = await http.put("/admin/v2/persistent/public/default/pt/partitions", json=4)
        assert r.status_code == 204
        bad = await http.put("/admin/v2/tenants/public", json=tenant)
        assert bad.status_code == 409
        assert bad.headers["content-type"] == "application/json"
        assert "reason" in bad.json()

    async with _serving(url, port) as http:
        assert (await http.get("/admin/v2/tenants")).json() == ["public"]
        got = await http.get("/admin/v2/namespaces/public/default/retention")
        assert got.json() == retention
        got = await http.get("/admin/v2/persistent/public/default/pt/partitions")
        assert got.json()["partitions"] == 4
        lookup = await http.get("/lookup/v2/topic/persistent/public/default/pt")
        assert lookup.json()["brokerUrl"].startswith("pulsar://")
