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
