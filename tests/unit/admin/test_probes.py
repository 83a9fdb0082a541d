"""The broker health check and the /metrics mount of the admin app."""

from __future__ import annotations

import httpx

from magnetar.admin import create_app
from magnetar.telemetry import metric_names as names
from magnetar.telemetry.metrics import Metrics, Sample
from tests.unit.admin.fake_broker import FakeTopicService


async def test_health_is_ok_text(http: httpx.AsyncClient) -> None:
    response = await http.get("/admin/v2/brokers/health")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    assert response.text == "ok"


async def test_health_fails_when_the_metadata_store_does(
    http: httpx.AsyncClient, broker: FakeTopicService
) -> None:
    await broker.resources.store.close()
    response = await http.get("/admin/v2/brokers/health")
    assert response.status_code >= 500
    assert "reason" in response.json()


async def get_metrics(app: object) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        return await client.get("/metrics")


async def test_metrics_served_when_given(broker: FakeTopicService) -> None:
    metrics = Metrics()
    metrics.observe(names.PULSAR_TOPICS, lambda: [Sample(3, {"cluster": "standalone"})])
    response = await get_metrics(create_app(broker, metrics))
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    assert 'pulsar_topics_count{cluster="standalone"} 3.0' in response.text
    assert (await get_metrics(create_app(broker))).status_code == 404
