"""TaskSet: holds its tasks until they end, logs failures, stops them all, and never swallows
the caller's own cancellation."""

from __future__ import annotations

import asyncio

import pytest
from structlog.testing import capture_logs

from magnetar.tasks import TaskSet


async def test_a_task_leaves_the_set_when_it_ends() -> None:
    tasks = TaskSet("test")
    release = asyncio.Event()
    task = tasks.spawn(release.wait(), name="waiter")
    assert len(tasks) == 1
    assert task.get_name() == "waiter"
    release.set()
    assert await task is True
    await asyncio.sleep(0)
    assert len(tasks) == 0


async def test_a_failed_task_is_logged_with_its_names() -> None:
    tasks = TaskSet("owner")

    async def boom() -> None:
        raise ValueError("broken")

    with capture_logs() as logs:
        task = tasks.spawn(boom(), name="boom")
        await asyncio.wait([task])
        await asyncio.sleep(0)
    failed = [entry for entry in logs if entry["event"] == "task_failed"]
    assert failed == [
        {
            "event": "task_failed",
            "log_level": "error",
            "task_set": "owner",
            "task": "boom",
            "error": "ValueError('broken')",
        }
    ]
    assert len(tasks) == 0


async def test_join_waits_for_all_and_raises_the_first_failure() -> None:
    tasks = TaskSet("test")
    done: list[int] = []

    async def work(n: int) -> None:
        await asyncio.sleep(0.01 * n)
        done.append(n)

    for n in (3, 1, 2):
        tasks.spawn(work(n))
    await tasks.join()
    assert sorted(done) == [1, 2, 3]

    async def boom() -> None:
        raise ValueError("broken")

    tasks.spawn(boom())
    with pytest.raises(ValueError, match="broken"):
        await tasks.join()


async def test_drain_waits_without_cancelling_and_reports_stragglers() -> None:
    tasks = TaskSet("test")
    quick = tasks.spawn(asyncio.sleep(0.01))
    slow = tasks.spawn(asyncio.sleep(60))
    assert await tasks.drain(timeout_s=0.2) is False
    assert quick.done()
    assert not slow.done()
    await tasks.close()
    assert await tasks.drain(timeout_s=0.2) is True


async def test_close_cancels_and_awaits_every_task() -> None:
    tasks = TaskSet("test")
    cleaned: list[str] = []

    async def worker(name: str) -> None:
        try:
            await asyncio.sleep(60)
        finally:
            await asyncio.sleep(0.01)  # cleanup that needs the loop
            cleaned.append(name)

    spawned = [tasks.spawn(worker(name)) for name in ("a", "b")]
    await asyncio.sleep(0)
    await tasks.close()
    assert sorted(cleaned) == ["a", "b"]
    assert all(task.cancelled() for task in spawned)
    assert len(tasks) == 0


async def test_close_cancelled_while_waiting_is_not_swallowed() -> None:
    tasks = TaskSet("test")
    release = asyncio.Event()

    async def stubborn() -> None:
        try:
            await asyncio.sleep(60)
        finally:
            await release.wait()  # finishes only after its cleanup is allowed to run

    tasks.spawn(stubborn())
    await asyncio.sleep(0)
    closer = asyncio.create_task(tasks.close())
    await asyncio.sleep(0.01)
    closer.cancel()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(closer, 5)
    assert closer.cancelled()


async def test_an_adopted_task_is_waited_for_and_logged_only_by_its_owner() -> None:
    owner = TaskSet("owner")
    adopter = TaskSet("adopter")
    release = asyncio.Event()

    async def fails_when_released() -> None:
        await release.wait()
        raise ValueError("broken")

    task = owner.spawn(fails_when_released(), name="work")
    adopter.adopt(task)
    adopter.adopt(owner.spawn(asyncio.sleep(0)))
    await asyncio.sleep(0.01)
    assert len(adopter) == 1
    assert await adopter.drain(timeout_s=0.05) is False
    with capture_logs() as logs:
        release.set()
        assert await adopter.drain(timeout_s=5) is True
        await asyncio.sleep(0)
    failed = [
        (entry["task_set"], entry["task"]) for entry in logs if entry["event"] == "task_failed"
    ]
    assert failed == [("owner", "work")]
    assert len(adopter) == 0
    assert len(owner) == 0
