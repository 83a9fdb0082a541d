"""Watch delivery shared by every backend: a bounded per-watch channel and a prefix hub.

A :class:`WatchChannel` is the :class:`~magnetar.metadata.store.Watch` a caller iterates. The
backend ``offer``\\ s events to it in commit order from the event loop; the channel holds at most
``limit`` undelivered events. A consumer that falls further behind gets :class:`WatchOverflow`
after the events it already has (never a silent gap), and must re-list and re-watch. ``fail``
ends the watch with another error (e.g. the etcd watch stream broke for good).

:class:`WatchHub` keeps the open channels of an embedded server and fans each event out to the
channels whose prefix matches. Everything here runs on one event loop; nothing is thread-safe.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Awaitable, Callable, Iterable
from typing import Self

from magnetar.metadata.errors import MetadataError, WatchOverflow
from magnetar.metadata.store import WatchEvent

DEFAULT_WATCH_LIMIT = 10_000


class WatchChannel:
    """One open watch: a bounded FIFO of events plus an end state."""

    def __init__(
        self,
        prefix: str,
        *,
        limit: int = DEFAULT_WATCH_LIMIT,
        on_close: Callable[[WatchChannel], Awaitable[None]] | None = None,
    ) -> None:
        if limit <= 0:
            raise ValueError(f"watch limit must be > 0, got {limit}")
        self.prefix = prefix
        self._limit = limit
        self._events: collections.deque[WatchEvent] = collections.deque()
        self._wakeup = asyncio.Event()
        self._closed = False
        self._error: MetadataError | None = None
        self._on_close = on_close

    @property
    def closed(self) -> bool:
        return self._closed

    def offer(self, event: WatchEvent) -> None:
        """Queue ``event`` for the consumer (called by the backend, on the loop)."""
        if self._closed or self._error is not None:
            return
        if len(self._events) >= self._limit:
            self._error = WatchOverflow(
                f"watch on {self.prefix!r} fell more than {self._limit} events behind"
            )
        else:
            self._events.append(event)
        self._wakeup.set()

    def fail(self, error: MetadataError) -> None:
        """End the watch with ``error`` once buffered events are consumed."""
        if self._error is None:
            self._error = error
        self._wakeup.set()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> WatchEvent:
        while True:
            if self._closed:
                raise StopAsyncIteration
            if self._events:
                return self._events.popleft()
            if self._error is not None:
                raise self._error
            self._wakeup.clear()
            await self._wakeup.wait()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._events.clear()
        self._wakeup.set()
        if self._on_close is not None:
            await self._on_close(self)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class WatchHub:
    """The open watches of one embedded server, matched by key prefix."""

    def __init__(self) -> None:
        self._channels: list[WatchChannel] = []

    def open(self, prefix: str, *, limit: int = DEFAULT_WATCH_LIMIT) -> WatchChannel:
        channel = WatchChannel(prefix, limit=limit, on_close=self._forget)
        self._channels.append(channel)
        return channel

    async def _forget(self, channel: WatchChannel) -> None:
        if channel in self._channels:
            self._channels.remove(channel)

    def publish(self, events: Iterable[WatchEvent]) -> None:
        for event in events:
            for channel in list(self._channels):
                if event.key.startswith(channel.prefix):
                    try:
                        channel.offer(event)
                    except RuntimeError:  # its event loop is gone (a client that never closed)
                        self._channels.remove(channel)

    def fail_all(self, error: MetadataError) -> None:
        for channel in self._channels:
            channel.fail(error)
        self._channels.clear()
