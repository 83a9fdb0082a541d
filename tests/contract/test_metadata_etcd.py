"""etcd-only behaviour: errors are wrapped and bounded by the call deadline; a watch opened
after a read starts right after what that read saw."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from magnetar.metadata import EventType, StoreUnavailable, open_store
from magnetar.metadata.etcd import EtcdMetadataStore
from tests.kit.etcd import EtcdServer
from tests.kit.ports import free_port


async def test_unreachable_etcd_fails_fast_with_store_unavailable() -> None:
    started = time.monotonic()
    with pytest.raises(StoreUnavailable):
        await EtcdMetadataStore.open([f"127.0.0.1:{free_port()}"], call_timeout_s=0.5)
    assert time.monotonic() - started < 5


async def test_watch_after_list_misses_nothing_written_by_others(etcd_server: EtcdServer) -> None:
    p = f"/test/{uuid.uuid4().hex}/"
    reader = await open_store(etcd_server.url)
    writer = await open_store(etcd_server.url)
    try:
        await writer.put(p + "a", b"1")
        assert await reader.list_keys(p) == [p + "a"]
        await writer.put(p + "a", b"2")  # after the list, before the watch opens
        async with reader.watch(p) as watch:
            async with asyncio.timeout(10):
                event = await anext(aiter(watch))
        assert (event.type, event.key, event.value, event.version) == (
            EventType.PUT,
            p + "a",
            b"2",
            1,
        )
    finally:
        await reader.close()
        await writer.close()


async def test_a_host_name_endpoint_connects(etcd_server: EtcdServer) -> None:
    # Found running the image with the operator's pod commands: etcd3aio dials an ``ipv4:``
    # gRPC target, so etcd://<service>.svc:2379 never connected. LOCALHOST is a host name
    # (etcd3aio only rewrites lower-case "localhost") that resolves to 127.0.0.1 everywhere.
    unresolvable = "no-such-host.invalid:2379"
    url = f"etcd://{unresolvable},LOCALHOST:{etcd_server.client_port}"
    store = await open_store(url)
    try:
        p = f"/test/{uuid.uuid4().hex}/"
        await store.put(p + "a", b"1")
        assert await store.list_keys(p) == [p + "a"]
    finally:
        await store.close()


async def test_no_resolvable_endpoint_is_store_unavailable_naming_the_host() -> None:
    with pytest.raises(StoreUnavailable, match=r"no etcd endpoint resolves.*no-such-host\.invalid"):
        await open_store("etcd://no-such-host.invalid:2379")
