"""Lookup answers, error bodies for every kind of bad request, and the OpenAPI docs."""

from __future__ import annotations

import httpx


async def test_lookup(http: httpx.AsyncClient, ns: str) -> None:
    r = await http.get("/lookup/v2/topic/persistent/acme/orders/t1")
    assert r.status_code == 200
    assert r.json() == {
        "brokerUrl": "pulsar://127.0.0.1:6650",
        "brokerUrlTls": None,
        "httpUrl": "http://127.0.0.1:8080",
        "httpUrlTls": None,
        "nativeUrl": "pulsar://127.0.0.1:6650",
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
