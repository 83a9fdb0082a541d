"""open_store URL parsing: bad URLs fail with a ValueError that names the URL and the forms."""

from __future__ import annotations

import pytest

from magnetar.metadata import open_store
from magnetar.metadata.factory import parse_etcd_endpoints


@pytest.mark.parametrize(
    "url",
    [
        "",
        "memory",
        "memory://",
        "memory://a/b",
        "rocksdb://relative/path",
        "rocksdb:///",
        "etcd://",
        "etcd://host",
        "etcd://host:port",
        "etcd://host:99999",
        "etcd://a:1,,b:2",
        "zk://127.0.0.1:2181",
    ],
)
async def test_bad_urls_name_the_url_and_the_accepted_forms(url: str) -> None:
    with pytest.raises(ValueError, match="accepted forms") as err:
        await open_store(url)
    assert repr(url) in str(err.value)


async def test_session_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="session_timeout_s"):
        await open_store("memory://x", session_timeout_s=0)


def test_etcd_endpoints_parse() -> None:
    url = "etcd://127.0.0.1:2379,127.0.0.2:2380"
    assert parse_etcd_endpoints(url, url[7:]) == ["127.0.0.1:2379", "127.0.0.2:2380"]


async def test_memory_stores_with_one_name_share_a_server() -> None:
    a = await open_store("memory://factory-shared")
    b = await open_store("memory://factory-shared")
    c = await open_store("memory://factory-other")
    try:
        await a.put("/k", b"v")
        assert await b.get("/k") is not None
        assert await c.get("/k") is None
    finally:
        for store in (a, b, c):
            await store.close()
