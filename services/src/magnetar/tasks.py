"""A set of background tasks owned by one object: no orphan ``create_task``.

``asyncio`` keeps only a weak reference to a task, so a task nobody holds may be collected
before it ends, and a failure nobody awaits is lost. A :class:`TaskSet` holds a strong
reference to each task it spawned until the task ends, logs a task that ended with an
exception (``task_failed``, with the set's and the task's name), and stops them all on
:meth:`TaskSet.close`. A set may also :meth:`~TaskSet.adopt` a task another set spawned, to wait
for it (e.g. a consumer's acks among its connection's requests).

Invariants: a task leaves the set when it is done, never before; :meth:`TaskSet.close` and
:meth:`TaskSet.join` propagate the caller's own cancellation (STYLE.md: never swallow
``CancelledError``) while the cancellation of the tasks they stop is expected and absorbed.

Callers: the owner, from tasks on the loop the tasks run on (one loop per set).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from magnetar.telemetry import get_logger

log = get_logger(__name__)

T = TypeVar("T")


class TaskSet:
    """The running tasks of one owner; see the module docstring."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._tasks: set[asyncio.Task[Any]] = set()

    def __len__(self) -> int:
        return len(self._tasks)

    def spawn(self, work: Coroutine[Any, Any, T], *, name: str | None = None) -> asyncio.Task[T]:
        """Run ``work`` as a task of this set (on the running loop) and return the task."""
        task = asyncio.get_running_loop().create_task(work, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._finished)
        return task

    def adopt(self, task: asyncio.Task[Any]) -> None:
        """Hold ``task``, started by another owner, until it ends, so that :meth:`join`,
        :meth:`drain` and :meth:`close` include it; its failure is logged by its owner, not here."""
        if not task.done():
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            log.error("task_failed", task_set=self.name, task=task.get_name(), error=repr(error))

    async def join(self) -> None:
        """Wait for the tasks running now; raise the first failure among them (as ``gather``)."""
        if self._tasks:
            await asyncio.gather(*self._tasks)

    async def drain(self, timeout_s: float | None = None) -> bool:
        """Wait up to ``timeout_s`` for the tasks running now to end by themselves (none is
        cancelled, no failure is raised); True if all did."""
        if not self._tasks:
            return True
        _, pending = await asyncio.wait(set(self._tasks), timeout=timeout_s)
        return not pending

    async def close(self) -> None:
        """Cancel every task and wait until all have ended; their errors are only logged."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            # return_exceptions absorbs the tasks' own CancelledError; if the caller is
            # cancelled while it waits, gather raises that cancellation here.
            await asyncio.gather(*tasks, return_exceptions=True)
