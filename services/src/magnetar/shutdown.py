"""The ordered shutdown of a process: the stop request and one bounded step at a time.

:func:`stop_event` turns SIGTERM and SIGINT into one :class:`asyncio.Event`, the process's only
request to stop. :func:`shutdown_step` runs one step of the shutdown that follows (stop
accepting, drain, close ledgers, close metadata) under its own timeout; a step that times out or
fails is logged (``shutdown_step_timeout`` / ``shutdown_step_failed``, with the step's name) and
never keeps the steps after it from running.

Invariants: a step's cancellation is not caught (``CancelledError`` is no ``Exception``), so
cancelling a process's shutdown still stops it.

Callers: the entry points of the bookie, broker and standalone processes, from their main task.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Awaitable

from magnetar.telemetry import get_logger

log = get_logger(__name__)

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def stop_event() -> asyncio.Event:
    """An event that SIGTERM and SIGINT set: the process's one request to stop."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, stop.set)
    return stop


async def shutdown_step(name: str, work: Awaitable[object], timeout_s: float) -> None:
    """One shutdown step: bounded, logged (with how long it took), never stopping the steps
    after it."""
    started = time.monotonic()
    try:
        async with asyncio.timeout(timeout_s):
            await work
        log.info("shutdown_step_finished", step=name, seconds=round(time.monotonic() - started, 3))
    except TimeoutError:
        log.error("shutdown_step_timeout", step=name, timeout_s=timeout_s)
    except Exception as exc:
        log.error("shutdown_step_failed", step=name, error=repr(exc))
