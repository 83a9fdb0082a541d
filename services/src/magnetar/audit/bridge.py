"""Drive asyncio code from Spark's synchronous reader callbacks.

A Python data source's ``read()`` is a plain generator running in a Spark Python worker, with
no event loop. :func:`iterate` gives it an async iterator's items one at a time on a private
loop: nothing runs ahead of what the reader has consumed, so memory stays bounded by one item
(one bookie listing chunk).

Concurrency: each call owns its loop for its whole life, on the calling thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TypeVar

T = TypeVar("T")


def iterate(source: Callable[[], AsyncIterator[T]]) -> Iterator[T]:
    """The items of ``source()`` (created on the private loop), pulled one at a time."""
    loop = asyncio.new_event_loop()
    items: AsyncIterator[T] | None = None

    async def start() -> AsyncIterator[T]:
        return source()

    try:
        items = loop.run_until_complete(start())
        while True:
            try:
                yield loop.run_until_complete(anext(items))
            except StopAsyncIteration:
                return
    finally:
        if items is not None and hasattr(items, "aclose"):
            loop.run_until_complete(items.aclose())
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
