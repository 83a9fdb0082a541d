"""AddQueue, the bounded FIFO in front of both bookie clients' sender tasks."""

from __future__ import annotations

import asyncio

from magnetar.ids import BookieId
from magnetar.ledger.bookie_client import AddQueue, AddRequest
from magnetar.ledger.errors import BookieUnavailable

BID = BookieId("bookie-1")


def _add(entry_id: int, size: int) -> AddRequest:
    return AddRequest(1, entry_id, entry_id - 1, b"x" * size, 0, b"key")


async def test_take_keeps_order_and_limits_entries_and_bytes() -> None:
    queue = AddQueue(BID, limit=10)
    for i in range(5):
        assert queue.offer(_add(i, 10), lambda _r: None)
    assert [a.entry_id for a, _ in queue.take(2)] == [0, 1]
    assert [a.entry_id for a, _ in queue.take(10, max_bytes=15)] == [2]
    big = AddQueue(BID, limit=10)
    big.offer(_add(0, 100), lambda _r: None)
    assert [a.entry_id for a, _ in big.take(10, max_bytes=15)] == [0]  # one always goes
    assert [a.entry_id for a, _ in queue.take(10)] == [3, 4]
    assert queue.take(10) == []


async def test_offer_beyond_limit_fails_the_add_and_fail_all_empties() -> None:
    queue = AddQueue(BID, limit=1)
    results: list[int | BaseException] = []
    assert queue.offer(_add(0, 1), results.append)
    assert not queue.offer(_add(1, 1), results.append)
    assert len(results) == 1
    assert isinstance(results[0], BookieUnavailable)
    queue.fail_all(BookieUnavailable(BID, "closed"))
    assert len(results) == 2
    assert isinstance(results[1], BookieUnavailable)
    assert queue.take(10) == []


async def test_wait_returns_once_an_add_is_queued() -> None:
    queue = AddQueue(BID, limit=4)
    waiter = asyncio.create_task(queue.wait())
    await asyncio.sleep(0)
    assert not waiter.done()
    queue.offer(_add(0, 1), lambda _r: None)
    async with asyncio.timeout(1):
        await waiter
