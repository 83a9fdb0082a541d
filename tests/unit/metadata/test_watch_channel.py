"""WatchChannel: ordered delivery, clean end on close, overflow reported instead of a gap."""

from __future__ import annotations

import asyncio

import pytest

from magnetar.metadata import EventType, WatchEvent, WatchOverflow
from magnetar.metadata.watch import WatchChannel, WatchHub


def put(key: str, version: int = 0) -> WatchEvent:
    return WatchEvent(EventType.PUT, key, b"v", version)


async def test_events_come_out_in_order_then_overflow_is_raised() -> None:
    channel = WatchChannel("/", limit=2)
    for i in range(3):
        channel.offer(put(f"/k{i}"))
    async with asyncio.timeout(5):
        assert (await anext(channel)).key == "/k0"
        assert (await anext(channel)).key == "/k1"
        with pytest.raises(WatchOverflow):
            await anext(channel)


async def test_close_wakes_a_waiting_consumer() -> None:
    channel = WatchChannel("/")

    async def consume() -> list[WatchEvent]:
        return [e async for e in channel]

    task = asyncio.create_task(consume())
    await asyncio.sleep(0)
    await channel.close()
    async with asyncio.timeout(5):
        assert await task == []


async def test_hub_routes_by_prefix() -> None:
    hub = WatchHub()
    a, b = hub.open("/a/"), hub.open("/b/")
    hub.publish([put("/a/1"), put("/b/1"), put("/ab")])
    await b.close()
    hub.publish([put("/b/2")])
    async with asyncio.timeout(5):
        assert (await anext(a)).key == "/a/1"
    await a.close()
