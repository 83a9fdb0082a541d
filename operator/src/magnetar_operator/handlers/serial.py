"""One pass at a time over each object.

Two tasks pass over the same object: kopf's change handler (and its retries) and the periodic
:mod:`.resync`. Each pass reads the children, plans, then writes; two passes at once can
interleave, and the one that read first then writes what it planned from a world that is
gone. A bookie roll showed it: a resync pass that read partition 3 wrote it back after the
handler's pass had moved it to 2. :func:`one_pass_at_a_time` makes a pass wait for the one
under way on the same object, so each pass reads what the last one wrote.

The locks belong to the running event loop (an operator runs on one; tests start several, one
after another, each on a loop of its own) and an object's lock is dropped when no pass holds
or waits for it.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field


@dataclass
class _Held:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0  # passes holding or waiting for the lock


_held: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, ...], _Held]] = (
    weakref.WeakKeyDictionary()
)


@asynccontextmanager
async def one_pass_at_a_time(*key: str) -> AsyncIterator[None]:
    """Hold the pass over the object named by ``key`` (plural, namespace, name)."""
    objects = _held.setdefault(asyncio.get_running_loop(), {})
    held = objects.setdefault(key, _Held())
    held.users += 1
    try:
        async with held.lock:
            yield
    finally:
        held.users -= 1
        if held.users == 0:
            del objects[key]


def passes_under_way() -> int:
    """How many objects have a pass held or waiting on the running loop (for tests)."""
    return len(_held.get(asyncio.get_running_loop(), {}))
