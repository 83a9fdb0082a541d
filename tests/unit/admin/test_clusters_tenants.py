"""Clusters and tenants over HTTP: Pulsar's paths, JSON shapes and statuses."""

from __future__ import annotations

import httpx

CLUSTER = {"serviceUrl": "http://127.0.0.1:8080", "brokerServiceUrl": "pulsar://127.0.0.1:6650"}


async def test_cluster_lifecycle(http: httpx.AsyncClient) -> None:
    assert (await http.get("/admin/v2/clusters")).json() == []
    assert (await http.put("/admin/v2/clusters/standalone", json=CLUSTER)).status_code == 204
    again = await http.put("/admin/v2/clusters/standalone", json=CLUSTER)
    assert again.status_code == 409
    assert "already exists" in again.json()["reason"]
    assert (await http.get("/admin/v2/clusters")).json() == ["standalone"]
    assert (await http.get("/admin/v2/clusters/standalone")).json() == CLUSTER
    changed = {**CLUSTER, "serviceUrl": "http://127.0.0.1:9090"}
    assert (await http.post("/admin/v2/clusters/standalone", json=changed)).status_code == 204
    assert (await http.get("/admin/v2/clusters/standalone")).json()["serviceUrl"].endswith("9090")
    assert (await http.delete("/admin/v2/clusters/standalone")).status_code == 204
    missing = await http.get("/admin/v2/clusters/standalone")
    assert missing.status_code == 404
    assert missing.json() == {"reason": "Cluster standalone does not exist"}
    assert (await http.post("/admin/v2/clusters/standalone", json=CLUSTER)).status_code == 404


async def test_tenant_lifecycle(http: httpx.AsyncClient) -> None:
    await http.put("/admin/v2/clusters/standalone", json=CLUSTER)
    info = {"adminRoles": ["ops"], "allowedClusters": ["standalone"]}
    assert (await http.put("/admin/v2/tenants/acme", json=info)).status_code == 204
    assert (await http.put("/admin/v2/tenants/acme", json=info)).status_code == 409
    assert (await http.get("/admin/v2/tenants")).json() == ["acme"]
    assert (await http.get("/admin/v2/tenants/acme")).json() == info
    update = {"adminRoles": ["ops", "dev"], "allowedClusters": ["standalone"]}
    assert (await http.post("/admin/v2/tenants/acme", json=update)).status_code == 204
    assert (await http.get("/admin/v2/tenants/acme")).json()["adminRoles"] == ["dev", "ops"]
    assert (await http.post("/admin/v2/tenants/ghost", json=update)).status_code == 404
    assert (await http.delete("/admin/v2/tenants/acme")).status_code == 204
    assert (await http.get("/admin/v2/tenants/acme")).status_code == 404
    assert (await http.delete("/admin/v2/tenants/acme")).status_code == 404


async def test_tenant_with_namespaces_cannot_be_deleted(http: httpx.AsyncClient, ns: str) -> None:
    refused = await http.delete("/admin/v2/tenants/acme")
    assert refused.status_code == 409
    assert "active namespaces" in refused.json()["reason"]
    assert (await http.delete("/admin/v2/tenants/acme?force=true")).status_code == 204
    assert (await http.get("/admin/v2/tenants")).json() == []


async def test_tenant_errors(http: httpx.AsyncClient) -> None:
    unknown = await http.put("/admin/v2/tenants/acme", json={"allowedClusters": ["nowhere"]})
    assert unknown.status_code == 412
    assert "nowhere" in unknown.json()["reason"]
    bad_name = await http.put("/admin/v2/tenants/bad%20name", json={})
    assert bad_name.status_code == 412
    assert "not valid" in bad_name.json()["reason"]
    wrong_type = await http.put("/admin/v2/tenants/acme", json={"adminRoles": "ops"})
    assert wrong_type.status_code == 412
    assert "adminRoles" in wrong_type.json()["reason"]
    not_json = await http.put(
        "/admin/v2/tenants/acme", content=b"{nope", headers={"content-type": "application/json"}
    )
    assert not_json.status_code == 400
    assert "reason" in not_json.json()
