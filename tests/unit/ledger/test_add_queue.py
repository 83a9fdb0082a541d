"""AddQueue, the bounded FIFO of runs of adds in front of both bookie clients' sender tasks."""

from __future__ import annotations

import asyncio

from magnetar.ids import BookieId
from magnetar.ledger.bookie_client import AddQueue, AddRequest
from magnetar.ledger.errors import BookieUnavailable

BID = BookieId("bookie-1")


def _add(entry_id: int, size: int) -> AddRequest:
    return AddRequest(1, entry_id, entry_id - 1, b"x" * size, 0, b"key")


def _ids(taken: list[tuple[list[AddRequest], object]]) -> list[list[int]]:
    return [[a.entry_id for a in adds] for adds, _ in taken]


async def test_take_keeps_order_and_limits_entries_and_bytes_by_whole_runs() -> None:
    queue = AddQueue(BID, limit=10)
    for i in range(5):
        assert queue.offer([_add(i, 10)], lambda _r: None)
    assert _ids(queue.take(2)) == [[0], [1]]
    assert _ids(queue.take(10, max_bytes=15)) == [[2]]
    big = AddQueue(BID, limit=10)
    big.offer([_add(0, 100)], lambda _r: None)
    assert _ids(big.take(10, max_bytes=15)) == [[0]]  # one always goes
    assert _ids(queue.take(10)) == [[3], [4]]
    assert queue.take(10) == []


async def test_a_run_is_taken_whole_and_never_split() -> None:
    queue = AddQueue(BID, limit=100)
    queue.offer([_add(0, 10), _add(1, 10), _add(2, 10)], lambda _r: None)
    queue.offer([_add(3, 10), _add(4, 10)], lambda _r: None)
    queue.offer([_add(5, 10)], lambda _r: None)
    # Two entries fit, but the first run has three: it goes alone (at least one run).
    assert _ids(queue.take(2)) == [[0, 1, 2]]
    # 25 bytes: the second run (20) fits, the third would exceed.
    assert _ids(queue.take(10, max_bytes=25)) == [[3, 4]]
    assert _ids(queue.take(10)) == [[5]]


async def test_offer_beyond_limit_fails_the_run_and_fail_all_empties() -> None:
    queue = AddQueue(BID, limit=2)
    results: list[list[int] | BaseException] = []
    assert queue.offer([_add(0, 1), _add(1, 1)], results.append)
    assert not queue.offer([_add(2, 1)], results.append)  # two adds queued: full
    assert len(results) == 1
    assert isinstance(results[0], BookieUnavailable)
    queue.fail_all(BookieUnavailable(BID, "closed"))
    assert len(results) == 2  # one callback for the whole run
    assert isinstance(results[1], BookieUnavailable)
    assert queue.take(10) == []
    assert queue.offer([_add(3, 1)], results.append)  # room again once emptied


async def test_wait_returns_once_a_run_is_queued() -> None:
    queue = AddQueue(BID, limit=4)
    waiter = asyncio.create_task(queue.wait())
    await asyncio.sleep(0)
    assert not waiter.done()
    queue.offer([_add(0, 1)], lambda _r: None)
    async with asyncio.timeout(1):
        await waiter
