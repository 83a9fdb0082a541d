"""cancel_and_wait stops a child task but never swallows the caller's own cancellation."""

from __future__ import annotations

import asyncio

import pytest

from magnetar.cancellation import cancel_and_wait


async def test_stops_the_child_quietly() -> None:
    child = asyncio.create_task(asyncio.sleep(60))
    await cancel_and_wait(child)
    assert child.cancelled()


async def test_caller_cancelled_while_waiting_is_not_swallowed() -> None:
    release = asyncio.Event()

    async def stubborn() -> None:
        try:
            await asyncio.sleep(60)
        finally:
            await release.wait()  # finishes only after its cleanup is allowed to run

    child = asyncio.create_task(stubborn())
    await asyncio.sleep(0)
    caller = asyncio.create_task(cancel_and_wait(child))
    await asyncio.sleep(0.01)
    caller.cancel()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(caller, 5)
    assert caller.cancelled()
