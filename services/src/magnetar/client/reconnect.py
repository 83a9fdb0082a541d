"""Reattaching a producer or consumer after its connection broke or the broker closed it.

A :class:`Reconnector` owns at most one background task. :meth:`Reconnector.trigger` starts it
unless it already runs (so a burst of triggers costs one reconnect). The task waits a backoff
delay, then calls ``attach()``; on failure it waits the next (capped, jittered) delay of the
:data:`~magnetar.backoff.RECONNECT` backoff and tries again, until ``attach`` succeeds, the
error is one a handle must not retry (:func:`~magnetar.client.errors.gives_up_reconnecting`; then
``on_give_up`` is called), or :meth:`Reconnector.close` cancels it.

:func:`retry_until` is :func:`~magnetar.backoff.retry` with the same backoff and a deadline:
used for the first attach of a handle, which fails to the caller with
:class:`~magnetar.client.errors.OperationTimeout` once the operation timeout is spent.

Concurrency: one event loop; ``trigger`` is a plain method, safe from handler callbacks.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from typing import TypeVar

from magnetar.backoff import RECONNECT, Backoff, retry
from magnetar.cancellation import cancel_and_wait
from magnetar.client.errors import (
    ClientError,
    OperationTimeout,
    ServerErrorResponse,
    gives_up_reconnecting,
)
from magnetar.telemetry import get_logger

log = get_logger(__name__)

R = TypeVar("R")


def is_retryable(error: BaseException) -> bool:
    """Whether a first attach may be tried again (connection trouble, busy, not ready ...)."""
    if isinstance(error, ClientError):
        return error.retryable
    return isinstance(error, (OSError, TimeoutError))


def keeps_reconnecting(error: BaseException) -> bool:
    """Whether a handle that was attached before keeps trying after ``error``.

    More lenient than :func:`is_retryable`: a broker that restarts may briefly answer
    TopicNotFound or MetadataError; only errors that cannot heal (fenced, terminated,
    unauthorized ...) stop the handle.
    """
    if isinstance(error, ServerErrorResponse):
        return not gives_up_reconnecting(error)
    return is_retryable(error)


class Reconnector:
    """Runs ``attach`` in the background, with backoff, until it succeeds."""

    def __init__(
        self,
        name: str,
        attach: Callable[[], Awaitable[None]],
        *,
        backoff: Backoff | None = None,
        on_give_up: Callable[[BaseException], None] | None = None,
    ) -> None:
        self._name = name
        self._attach = attach
        self._backoff = backoff or RECONNECT.backoff()
        self._on_give_up = on_give_up
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def trigger(self) -> None:
        """Schedule a reconnect; no-op while one runs or after close."""
        if self._closed or self.running:
            return
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"reconnect-{self._name}"
        )

    async def _run(self) -> None:
        # Not retry(): the first attempt waits a delay too (the broker just dropped us), and a
        # give-up calls on_give_up instead of raising into a task nobody awaits.
        while True:
            delay = self._backoff.next()
            await asyncio.sleep(delay)
            try:
                await self._attach()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if not keeps_reconnecting(exc):
                    log.warning("client_reconnect_gave_up", handle=self._name, error=repr(exc))
                    if self._on_give_up is not None:
                        self._on_give_up(exc)
                    return
                log.info(
                    "client_reconnect_failed",
                    handle=self._name,
                    attempt=self._backoff.attempts,
                    error=repr(exc),
                )
                continue
            self._backoff.reset()
            log.info("client_reconnected", handle=self._name)
            return

    async def close(self) -> None:
        self._closed = True
        task, self._task = self._task, None
        if task is not None and task is not asyncio.current_task():
            await cancel_and_wait(task)


async def retry_until(operation: Callable[[], Awaitable[R]], *, timeout_s: float, what: str) -> R:
    """``operation()``, retried with backoff on retryable errors until ``timeout_s`` is spent."""

    attempts = itertools.count(1)

    def retrying(exc: Exception, _delay: float) -> None:
        log.info("client_retry", what=what, attempt=next(attempts), error=repr(exc))

    def timed_out(exc: Exception) -> Exception:
        return OperationTimeout(f"{what} did not succeed within {timeout_s}s: {exc}")

    return await retry(
        operation,
        RECONNECT,
        retry_on=is_retryable,
        give_up_after_s=timeout_s,
        on_retry=retrying,
        exhausted=timed_out,
    )
