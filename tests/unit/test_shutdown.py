"""shutdown_step bounds and logs one step and never stops the steps after it; stop_event is set
by SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest
from structlog.testing import capture_logs

from magnetar.shutdown import STOP_SIGNALS, shutdown_step, stop_event


async def test_steps_after_a_hung_or_failed_step_still_run() -> None:
    ran: list[str] = []

    async def hang() -> None:
        await asyncio.sleep(60)

    async def fail() -> None:
        raise RuntimeError("disk gone")

    async def close() -> None:
        ran.append("close")

    with capture_logs() as logs:
        await shutdown_step("drain", hang(), 0.01)
        await shutdown_step("close_ledgers", fail(), 1.0)
        await shutdown_step("close_metadata", close(), 1.0)
    assert ran == ["close"]
    assert [(e["event"], e["step"]) for e in logs] == [
        ("shutdown_step_timeout", "drain"),
        ("shutdown_step_failed", "close_ledgers"),
        ("shutdown_step_finished", "close_metadata"),
    ]
    assert logs[-1]["seconds"] >= 0  # how long each finished step took, for a slow stop


async def test_a_cancelled_shutdown_is_not_swallowed() -> None:
    step = asyncio.create_task(shutdown_step("drain", asyncio.sleep(60), 30.0))
    await asyncio.sleep(0.01)
    step.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(step, 5)


async def test_sigterm_sets_the_stop_event() -> None:
    loop = asyncio.get_running_loop()
    stop = stop_event()
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        async with asyncio.timeout(5):
            await stop.wait()
    finally:
        for sig in STOP_SIGNALS:
            loop.remove_signal_handler(sig)
