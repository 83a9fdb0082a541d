"""Topics over HTTP (persistent and non-persistent), against the broker test double: paths,
statuses, JSON shapes and fan-out over partitions."""

from __future__ import annotations

import httpx
import pytest

from tests.unit.admin.fake_broker import FakeTopicService

P = "/admin/v2/persistent/acme/orders"


@pytest.mark.parametrize("domain", ["persistent", "non-persistent"])
async def test_non_partitioned_lifecycle(http: httpx.AsyncClient, ns: str, domain: str) -> None:
    base = f"/admin/v2/{domain}/acme/orders"
    assert (await http.put(f"{base}/t1")).status_code == 204
    exists = await http.put(f"{base}/t1")
    assert exists.status_code == 409
    assert "already exists" in exists.json()["reason"]
    assert (await http.get(base)).json() == [f"{domain}://acme/orders/t1"]
    assert (await http.get(f"{base}/t1/partitions")).json() == {"partitions": 0, "deleted": False}
    assert (await http.delete(f"{base}/t1")).status_code == 204
    assert (await http.delete(f"{base}/t1")).status_code == 404
    assert (await http.get(base)).json() == []


async def test_topic_in_missing_namespace_or_with_bad_name(
    http: httpx.AsyncClient, ns: str
) -> None:
    assert (await http.put("/admin/v2/persistent/acme/nope/t")).status_code == 404
    assert (await http.put("/admin/v2/persistent/ghost/orders/t")).status_code == 404
    assert (await http.get("/admin/v2/persistent/acme/nope")).status_code == 404
    bad = await http.put("/admin/v2/persistent/acme/bad%20ns/t")
    assert bad.status_code == 412
    assert "reason" in bad.json()


async def test_partitioned_lifecycle(
    http: httpx.AsyncClient, ns: str, broker: FakeTopicService
) -> None:
    assert (await http.put(f"{P}/pt/partitions", json=3)).status_code == 204
    assert (await http.put(f"{P}/pt/partitions", json=3)).status_code == 409
    assert (await http.get(f"{P}/pt/partitions")).json() == {"partitions": 3, "deleted": False}
    assert (await http.get(f"{P}/partitioned")).json() == ["persistent://acme/orders/pt"]
    # persistent partitions are created with the partitioned topic
    assert (await http.get(P)).json() == [
        f"persistent://acme/orders/pt-partition-{i}" for i in range(3)
    ]
    assert (await http.put(f"{P}/pt")).status_code == 409  # name taken by the partitioned topic
    shrink = await http.post(f"{P}/pt/partitions", json=2)
    assert shrink.status_code == 422
    assert (await http.post(f"{P}/pt/partitions", json=5)).status_code == 204
    assert (await http.get(f"{P}/pt/partitions")).json()["partitions"] == 5
    assert len((await http.get(P)).json()) == 5
    zero = await http.put(f"{P}/zero/partitions", json=0)
    assert zero.status_code == 406
    assert "more than 0" in zero.json()["reason"]
    assert (await http.put(f"{P}/junk/partitions", json="many")).status_code == 400
    assert (await http.delete(f"{P}/pt/partitions")).status_code == 204
    assert (await http.get(P)).json() == []
    assert (await http.delete(f"{P}/pt/partitions")).status_code == 404
    assert (await http.get(f"{P}/pt/partitions")).json()["partitions"] == 0


async def test_non_persistent_partitioned_topic_has_no_eager_partitions(
    http: httpx.AsyncClient, ns: str
) -> None:
    base = "/admin/v2/non-persistent/acme/orders"
    assert (await http.put(f"{base}/np/partitions", json=2)).status_code == 204
    assert (await http.get(f"{base}/partitioned")).json() == ["non-persistent://acme/orders/np"]
    assert (await http.get(f"{P}/partitioned")).json() == []
    assert (await http.get(base)).json() == []


async def test_check_allow_auto_creation(http: httpx.AsyncClient, ns: str) -> None:
    auto = {"allowAutoTopicCreation": True, "topicType": "partitioned", "defaultNumPartitions": 2}
    await http.post("/admin/v2/namespaces/acme/orders/autoTopicCreation", json=auto)
    r = await http.get(f"{P}/auto/partitions?checkAllowAutoCreation=false")
    assert r.json()["partitions"] == 0
    r = await http.get(f"{P}/auto/partitions?checkAllowAutoCreation=true")
    assert r.json()["partitions"] == 2
    assert (await http.get(f"{P}/partitioned")).json() == ["persistent://acme/orders/auto"]


async def test_subscriptions_and_cursor_operations(
    http: httpx.AsyncClient, ns: str, broker: FakeTopicService
) -> None:
    await http.put(f"{P}/t")
    assert (await http.put(f"{P}/t/subscription/s1")).status_code == 204
    body = {"ledgerId": -1, "entryId": -1}
    assert (await http.put(f"{P}/t/subscription/s2", json=body)).status_code == 204
    assert broker.topics["persistent://acme/orders/t"].subscriptions["s2"].is_earliest
    assert broker.topics["persistent://acme/orders/t"].subscriptions["s1"].is_latest
    assert (await http.put(f"{P}/t/subscription/s1")).status_code == 409
    assert (await http.get(f"{P}/t/subscriptions")).json() == ["s1", "s2"]
    assert (await http.post(f"{P}/t/subscription/s1/skip/5")).status_code == 204
    assert (await http.post(f"{P}/t/subscription/s1/skip_all")).status_code == 204
    assert (await http.post(f"{P}/t/subscription/s1/resetcursor/1700000000000")).status_code == 204
    r = await http.post(f"{P}/t/subscription/s1/resetcursor", json={"ledgerId": 7, "entryId": 3})
    assert r.status_code == 204
    assert (await http.post(f"{P}/t/subscription/s1/expireMessages/30")).status_code == 204
    assert (await http.post(f"{P}/t/all_subscription/expireMessages/60")).status_code == 204
    assert (await http.put(f"{P}/t/unload")).status_code == 204
    t = "persistent://acme/orders/t"
    assert broker.calls == [
        ("skip", t, "s1", 5),
        ("skip_all", t, "s1"),
        ("reset_time", t, "s1", 1700000000000),
        ("reset_id", t, "s1", 7, 3),
        ("expire", t, "s1", 30),
        ("expire", t, "s1", 60),
        ("expire", t, "s2", 60),
        ("unload", t),
    ]
    missing = await http.post(f"{P}/t/subscription/nope/skip_all")
    assert missing.status_code == 404
    bad_id = await http.post(f"{P}/t/subscription/s1/resetcursor", json={"ledgerId": "x"})
    assert bad_id.status_code == 400
    assert (await http.delete(f"{P}/t/subscription/s1")).status_code == 204
    assert (await http.delete(f"{P}/t/subscription/s1")).status_code == 404
    busy = await http.delete(f"{P}/t")
    assert busy.status_code == 412  # s2 is still there
    assert (await http.delete(f"{P}/t?force=true")).status_code == 204
    assert (await http.get(f"{P}/t/subscriptions")).status_code == 404


async def test_cursor_operations_fan_out_over_partitions(
    http: httpx.AsyncClient, ns: str, broker: FakeTopicService
) -> None:
    await http.put(f"{P}/pt/partitions", json=2)
    assert (await http.put(f"{P}/pt/subscription/s")).status_code == 204
    assert (await http.get(f"{P}/pt/subscriptions")).json() == ["s"]
    for i in range(2):
        assert broker.topics[f"persistent://acme/orders/pt-partition-{i}"].subscriptions
    assert (await http.post(f"{P}/pt/subscription/s/resetcursor/5")).status_code == 204
    assert (await http.post(f"{P}/pt/subscription/s/skip/1")).status_code == 405
    no_index = await http.post(
        f"{P}/pt/subscription/s/resetcursor", json={"ledgerId": 1, "entryId": 1}
    )
    assert no_index.status_code == 405
    one = {"ledgerId": 1, "entryId": 2, "partitionIndex": 1}
    assert (await http.post(f"{P}/pt/subscription/s/resetcursor", json=one)).status_code == 204
    assert broker.calls == [
        ("reset_time", "persistent://acme/orders/pt-partition-0", "s", 5),
        ("reset_time", "persistent://acme/orders/pt-partition-1", "s", 5),
        ("reset_id", "persistent://acme/orders/pt-partition-1", "s", 1, 2),
    ]


async def test_stats(http: httpx.AsyncClient, ns: str) -> None:
    await http.put(f"{P}/t")
    await http.put(f"{P}/t/subscription/s")
    stats = (await http.get(f"{P}/t/stats")).json()
    assert stats["subscriptions"]["s"]["msgBacklog"] == 2
    assert "ledgers" in (await http.get(f"{P}/t/internalStats")).json()
    assert (await http.get(f"{P}/missing/stats")).status_code == 404
    assert (await http.get(f"{P}/t/partitioned-stats")).status_code == 404

    await http.put(f"{P}/pt/partitions", json=3)
    await http.put(f"{P}/pt/subscription/s")
    agg = (await http.get(f"{P}/pt/partitioned-stats?perPartition=true")).json()
    assert agg["metadata"] == {"partitions": 3}
    assert agg["msgInCounter"] == 30
    assert agg["msgRateIn"] == pytest.approx(4.5)
    assert agg["subscriptions"]["s"]["msgBacklog"] == 6
    assert set(agg["partitions"]) == {
        f"persistent://acme/orders/pt-partition-{i}" for i in range(3)
    }
    brief = (await http.get(f"{P}/pt/partitioned-stats?perPartition=false")).json()
    assert brief["partitions"] == {}
