"""Stopping a background task without swallowing the caller's own cancellation.

``task.cancel(); await task`` raises the task's CancelledError in the caller, which the caller
wants to ignore. But the caller may itself be cancelled while it waits, and that cancellation
must propagate (STYLE.md: never swallow CancelledError). :func:`cancel_and_wait` tells the
two apart with ``Task.cancelling()``.
"""

from __future__ import annotations

import asyncio
from typing import Any


async def cancel_and_wait(task: asyncio.Task[Any] | None) -> None:
    """Cancel ``task`` and wait until it has finished; re-raise only our own cancellation."""
    if task is None:
        return
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise
