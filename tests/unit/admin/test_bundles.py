"""Namespace bundles in the admin API (the standalone's ownership: it owns every bundle)."""

from __future__ import annotations

import httpx

from tests.unit.admin.fake_broker import FakeTopicService


async def test_bundles_have_pulsars_shape(http: httpx.AsyncClient, ns: str) -> None:
    r = await http.get(f"/admin/v2/namespaces/{ns}/bundles")
    assert r.status_code == 200
    assert r.json() == {
        "boundaries": ["0x00000000", "0x40000000", "0x80000000", "0xc0000000", "0xffffffff"],
        "numBundles": 4,
    }
    assert (await http.get("/admin/v2/namespaces/acme/none/bundles")).status_code == 404


async def test_unload_closes_the_bundles_topics(
    http: httpx.AsyncClient, ns: str, broker: FakeTopicService
) -> None:
    r = await http.put(f"/admin/v2/namespaces/{ns}/0x40000000_0x80000000/unload")
    assert r.status_code == 204
    assert broker.calls == [("close_bundle_topics", f"{ns}/0x40000000_0x80000000")]
    assert (await http.put(f"/admin/v2/namespaces/{ns}/unload")).status_code == 204
    assert len(broker.calls) == 5
    missing = await http.put(f"/admin/v2/namespaces/{ns}/0x00000000_0x80000000/unload")
    assert missing.status_code == 404
