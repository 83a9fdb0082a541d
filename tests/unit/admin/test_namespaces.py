"""Namespaces and their policies over HTTP, with Pulsar's JSON shapes."""

from __future__ import annotations

import httpx

NS = "/admin/v2/namespaces/acme/orders"


async def test_namespace_create_list_delete(http: httpx.AsyncClient, ns: str) -> None:
    assert (await http.get("/admin/v2/namespaces/acme")).json() == ["acme/orders"]
    assert (await http.put(NS)).status_code == 409
    missing_tenant = await http.put("/admin/v2/namespaces/ghost/x")
    assert missing_tenant.status_code == 404
    assert missing_tenant.json() == {"reason": "Tenant ghost does not exist"}
    assert (await http.get("/admin/v2/namespaces/ghost")).status_code == 404
    assert (await http.put("/admin/v2/namespaces/acme/bad%20ns")).status_code == 412
    assert (await http.delete(NS)).status_code == 204
    assert (await http.get(NS)).status_code == 404
    assert (await http.delete(NS)).status_code == 404


async def test_namespace_with_topics_is_deleted_only_with_force(
    http: httpx.AsyncClient, ns: str
) -> None:
    assert (await http.put("/admin/v2/persistent/acme/orders/t1")).status_code == 204
    refused = await http.delete(NS)
    assert refused.status_code == 409
    assert "non empty" in refused.json()["reason"]
    assert (await http.delete(NS + "?force=true")).status_code == 204
    assert (await http.get("/admin/v2/persistent/acme/orders")).status_code == 404


async def test_get_policies_returns_the_policies_object(http: httpx.AsyncClient, ns: str) -> None:
    for path in (NS, NS + "/"):
        got = await http.get(path)
        assert got.status_code == 200
        doc = got.json()
        assert doc["auth_policies"]["namespace_auth"] == {}
        assert doc["retention_policies"] is None
        assert doc["schema_compatibility_strategy"] == "UNDEFINED"


async def test_retention(http: httpx.AsyncClient, ns: str) -> None:
    assert (await http.get(NS + "/retention")).status_code == 204  # unset: null
    body = {"retentionTimeInMinutes": 60, "retentionSizeInMB": 100}
    assert (await http.post(NS + "/retention", json=body)).status_code == 204
    assert (await http.get(NS + "/retention")).json() == body
    assert (await http.get(NS)).json()["retention_policies"] == body
    bad = await http.post(NS + "/retention", json={"retentionTimeInMinutes": -7})
    assert bad.status_code == 412
    assert (await http.delete(NS + "/retention")).status_code == 204
    assert (await http.get(NS + "/retention")).status_code == 204


async def test_message_ttl(http: httpx.AsyncClient, ns: str) -> None:
    assert (await http.post(NS + "/messageTTL", json=120)).status_code == 204
    assert (await http.get(NS + "/messageTTL")).json() == 120
    negative = await http.post(NS + "/messageTTL", json=-1)
    assert negative.status_code == 412
    assert negative.json() == {"reason": "Invalid value for message TTL"}
    not_int = await http.post(NS + "/messageTTL", json="soon")
    assert not_int.status_code == 400
    assert "reason" in not_int.json()
    assert (await http.delete(NS + "/messageTTL")).status_code == 204
    assert (await http.get(NS + "/messageTTL")).status_code == 204


async def test_backlog_quota(http: httpx.AsyncClient, ns: str) -> None:
    quota = {"limitSize": 1048576, "limitTime": -1, "policy": "producer_exception"}
    assert (await http.post(NS + "/backlogQuota", json=quota)).status_code == 204
    assert (await http.get(NS + "/backlogQuotaMap")).json() == {"destination_storage": quota}
    age = {"limitSize": -1, "limitTime": 3600, "policy": "consumer_backlog_eviction"}
    r = await http.post(NS + "/backlogQuota?backlogQuotaType=message_age", json=age)
    assert r.status_code == 204
    assert set((await http.get(NS + "/backlogQuotaMap")).json()) == {
        "destination_storage",
        "message_age",
    }
    bad = await http.post(NS + "/backlogQuota", json={"limitSize": 1, "policy": "explode"})
    assert bad.status_code == 412
    assert (await http.post(NS + "/backlogQuota?backlogQuotaType=x", json=quota)).status_code == 412
    # retention smaller than the quota is refused, as Pulsar does
    small = {"retentionTimeInMinutes": 10, "retentionSizeInMB": 0}
    refused = await http.post(NS + "/retention", json=small)
    assert refused.status_code == 412
    assert "backlog quota" in refused.json()["reason"]
    assert (await http.delete(NS + "/backlogQuota")).status_code == 204
    assert (await http.get(NS + "/backlogQuotaMap")).json() == {"message_age": age}


async def test_deduplication_and_auto_topic_creation(http: httpx.AsyncClient, ns: str) -> None:
    assert (await http.get(NS + "/deduplication")).status_code == 204
    assert (await http.post(NS + "/deduplication", json=True)).status_code == 204
    assert (await http.get(NS + "/deduplication")).json() is True
    assert (await http.get(NS)).json()["deduplicationEnabled"] is True
    assert (await http.delete(NS + "/deduplication")).status_code == 204
    auto = {"allowAutoTopicCreation": True, "topicType": "partitioned", "defaultNumPartitions": 3}
    assert (await http.post(NS + "/autoTopicCreation", json=auto)).status_code == 204
    assert (await http.get(NS + "/autoTopicCreation")).json() == auto
    missing = {"allowAutoTopicCreation": True, "topicType": "partitioned"}
    assert (await http.post(NS + "/autoTopicCreation", json=missing)).status_code == 412
    assert (await http.delete(NS + "/autoTopicCreation")).status_code == 204
    assert (await http.get(NS + "/autoTopicCreation")).status_code == 204


async def test_schema_compatibility_strategy(http: httpx.AsyncClient, ns: str) -> None:
    assert (await http.get(NS + "/schemaCompatibilityStrategy")).json() == "UNDEFINED"
    r = await http.put(NS + "/schemaCompatibilityStrategy", json="BACKWARD_TRANSITIVE")
    assert r.status_code == 204
    assert (await http.get(NS + "/schemaCompatibilityStrategy")).json() == "BACKWARD_TRANSITIVE"
    assert (await http.put(NS + "/schemaCompatibilityStrategy", json="NOPE")).status_code == 412
    assert (await http.delete(NS + "/schemaCompatibilityStrategy")).status_code == 204
    assert (await http.get(NS + "/schemaCompatibilityStrategy")).json() == "UNDEFINED"


async def test_permissions(http: httpx.AsyncClient, ns: str) -> None:
    r = await http.post(NS + "/permissions/app", json=["produce", "consume"])
    assert r.status_code == 204
    assert (await http.get(NS + "/permissions")).json() == {"app": ["consume", "produce"]}
    assert (await http.post(NS + "/permissions/app", json=["fly"])).status_code == 412
    assert (await http.delete(NS + "/permissions/app")).status_code == 204
    assert (await http.get(NS + "/permissions")).json() == {}


async def test_policies_of_a_missing_namespace_are_404(http: httpx.AsyncClient, ns: str) -> None:
    for path in ("/retention", "/messageTTL", "/permissions", ""):
        assert (await http.get("/admin/v2/namespaces/acme/none" + path)).status_code == 404
    r = await http.post("/admin/v2/namespaces/acme/none/messageTTL", json=5)
    assert r.status_code == 404
    assert r.json() == {"reason": "Namespace acme/none does not exist"}
