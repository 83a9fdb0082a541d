"""Lookup answers, error bodies for every kind of bad request, and the OpenAPI docs."""

from __future__ import annotations

import httpx
import pytest

from magnetar.errors import Timeout, Unavailable
from magnetar.metadata.errors import BadVersion
from tests.unit.admin.fake_broker import FakeTopicService


async def test_lookup(http: httpx.AsyncClient, ns: str) -> None:
    r = await http.get("/lookup/v2/topic/persistent/acme/orders/t1")
    assert r.status_code == 200
    # Pulsar's LookupData without TLS: null TLS fields omitted, legacy brokerUrlSsl "".
    assert r.json() == {
        "brokerUrl": "pulsar://127.0.0.1:6650",
        "httpUrl": "http://127.0.0.1:8080",
        "nativeUrl": "pulsar://127.0.0.1:6650",
        "brokerUrlSsl": "",
    }
    assert (await http.get("/lookup/v2/topic/non-persistent/acme/orders/t1")).status_code == 200
    assert (await http.get("/lookup/v2/topic/persistent/acme/none/t1")).status_code == 404
    bad = await http.get("/lookup/v2/topic/weird/acme/orders/t1")
    assert bad.status_code == 412
    assert "domain" in bad.json()["reason"]


async def test_unknown_paths_and_methods_answer_with_a_reason(http: httpx.AsyncClient) -> None:
    r = await http.get("/admin/v2/nothing-here")
    assert r.status_code == 404
    assert "reason" in r.json()
    r = await http.patch("/admin/v2/clusters")
    assert r.status_code == 405
    assert "reason" in r.json()


async def test_openapi_docs(http: httpx.AsyncClient) -> None:
    assert (await http.get("/docs")).status_code == 200
    paths = (await http.get("/openapi.json")).json()["paths"]
    for path in (
        "/admin/v2/clusters/{cluster}",
        "/admin/v2/tenants/{tenant}",
        "/admin/v2/namespaces/{tenant}/{namespace}/retention",
        "/admin/v2/persistent/{tenant}/{namespace}/{topic}/partitions",
        "/admin/v2/non-persistent/{tenant}/{namespace}/{topic}/stats",
        "/lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}",
    ):
        assert path in paths


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (Unavailable("bookies down"), 503),
        (Timeout("too slow"), 504),
        (BadVersion("/policies/x", 3, 4), 409),
        (RuntimeError("boom"), 500),
    ],
)
async def test_errors_the_real_broker_cannot_easily_produce(
    http: httpx.AsyncClient, ns: str, broker: FakeTopicService, error: Exception, status: int
) -> None:
    broker.fail_with = error
    r = await http.get("/admin/v2/persistent/acme/orders/t/stats")
    assert r.status_code == status
    assert r.json()["reason"]


async def test_policy_changes_are_announced_to_the_broker(
    http: httpx.AsyncClient, ns: str, broker: FakeTopicService
) -> None:
    body = {"retentionTimeInMinutes": 0, "retentionSizeInMB": 0}
    assert (
        await http.post("/admin/v2/namespaces/acme/orders/retention", json=body)
    ).status_code == 204
    assert ("policies_changed", "acme/orders") in broker.calls
    # the announcement carries what was stored (the broker applies it without reading it again)
    assert broker.announced is not None
    assert broker.announced.retention_policies is not None
    assert broker.announced.retention_policies.to_json() == body
