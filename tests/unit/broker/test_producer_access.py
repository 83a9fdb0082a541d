"""ProducerAccess: Pulsar's producer access modes and the topic epoch, without a broker."""

from __future__ import annotations

import asyncio

import pytest

from magnetar.broker.errors import ProducerBusy, ProducerFenced
from magnetar.broker.producer_access import AccessMode, ProducerAccess, ProducerRequest


class Topic:
    """A topic's connected producers around one ProducerAccess; epochs persisted in a list."""

    def __init__(self, epoch: int | None = None) -> None:
        self.persisted: list[int] = []
        self.connected: list[str] = []
        self.fenced: list[str] = []
        self.queued: list[str] = []
        self.access = ProducerAccess("t", epoch, self._persist)

    async def _persist(self, epoch: int) -> None:
        self.persisted.append(epoch)

    async def join(self, name: str, mode: AccessMode, epoch: int | None = None) -> int | None:
        def fence() -> None:
            self.fenced.extend(self.connected)
            self.connected.clear()

        got = await self.access.admit(
            ProducerRequest(name, mode, epoch),
            len(self.connected),
            fence,
            lambda: self.queued.append(name),
        )
        self.connected.append(name)
        return got

    def leave(self, name: str) -> None:
        self.connected.remove(name)
        self.access.released(name, len(self.connected))


async def test_exclusive_grants_epochs_and_refuses_others() -> None:
    topic = Topic()
    assert await topic.join("a", AccessMode.SHARED) is None  # no epoch yet
    with pytest.raises(ProducerFenced):
        await topic.join("x", AccessMode.EXCLUSIVE)  # a shared producer is connected
    topic.leave("a")
    assert await topic.join("x", AccessMode.EXCLUSIVE) == 0
    with pytest.raises(ProducerBusy):
        await topic.join("b", AccessMode.SHARED)
    with pytest.raises(ProducerFenced):
        await topic.join("y", AccessMode.EXCLUSIVE)
    topic.leave("x")
    assert await topic.join("y", AccessMode.EXCLUSIVE) == 1
    assert topic.persisted == [0, 1]


async def test_a_reconnect_with_an_older_epoch_is_fenced() -> None:
    topic = Topic(epoch=4)
    with pytest.raises(ProducerFenced, match="epoch"):
        await topic.join("old", AccessMode.EXCLUSIVE, epoch=3)
    assert await topic.join("same", AccessMode.EXCLUSIVE, epoch=4) == 4
    assert topic.persisted == []  # the epoch did not change


async def test_fencing_closes_the_holder_and_fails_the_waiters() -> None:
    topic = Topic()
    await topic.join("x", AccessMode.EXCLUSIVE)
    waiter = asyncio.ensure_future(topic.join("w", AccessMode.WAIT_FOR_EXCLUSIVE))
    await asyncio.sleep(0)
    assert topic.queued == ["w"]
    assert await topic.join("f", AccessMode.EXCLUSIVE_WITH_FENCING) == 1
    assert topic.fenced == ["x"]
    with pytest.raises(ProducerFenced):
        await waiter


async def test_waiters_are_granted_in_order_when_the_topic_is_free() -> None:
    topic = Topic()
    await topic.join("s1", AccessMode.SHARED)
    await topic.join("s2", AccessMode.SHARED)
    first = asyncio.ensure_future(topic.join("w1", AccessMode.WAIT_FOR_EXCLUSIVE))
    second = asyncio.ensure_future(topic.join("w2", AccessMode.WAIT_FOR_EXCLUSIVE))
    await asyncio.sleep(0)
    assert topic.queued == ["w1", "w2"]
    topic.leave("s1")
    await asyncio.sleep(0)
    assert not first.done()  # s2 is still connected
    topic.leave("s2")
    assert await asyncio.wait_for(first, 1) == 0
    assert not second.done()
    topic.leave("w1")
    assert await asyncio.wait_for(second, 1) == 1


async def test_a_withdrawn_waiter_leaves_the_queue() -> None:
    topic = Topic()
    await topic.join("x", AccessMode.EXCLUSIVE)
    waiter = asyncio.ensure_future(topic.join("w", AccessMode.WAIT_FOR_EXCLUSIVE))
    await asyncio.sleep(0)
    assert topic.access.waiting == 1
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert topic.access.waiting == 0
    topic.leave("x")
    assert await topic.join("s", AccessMode.SHARED) == 0
