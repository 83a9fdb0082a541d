"""The event loop a server process runs on: asyncio's own, or uvloop's (the one adapter through
which ``uvloop`` enters).

``event_loop = "uvloop"`` (a broker and standalone setting) runs the same asyncio code on
uvloop's loop, whose sockets, timers and callbacks are written in C: it saves the most where a
message costs several wakeups and syscalls (a paced load of unbatched messages: each SEND,
receipt, MESSAGE and ACK its own read or write); measurements in docs/benchmarks.md ("Issue 17,
first steps"). asyncio's loop stays the default.

Concurrency: called once, before the process's loop exists.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

LoopFactory = Callable[[], asyncio.AbstractEventLoop]


def loop_factory(name: str) -> LoopFactory | None:
    """A factory for ``asyncio.Runner`` (None: asyncio's default loop). The settings check the
    name first; an unknown one here is a ValueError."""
    if name == "asyncio":
        return None
    if name == "uvloop":
        import uvloop

        factory: LoopFactory = uvloop.new_event_loop
        return factory
    raise ValueError(f"unknown event loop {name!r}: choose asyncio or uvloop")
