"""The connections a TCP listener has accepted and not yet seen finish (broker and proxy).

A listener adds each connection it accepts and discards it when the connection has finished;
:meth:`OpenConnections.close` stops the server, closes every open connection and waits,
bounded, until all have finished and the server is closed (a connection that does not finish
in time is left to the process exit).

Concurrency: on the listener's loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Generic, Protocol, TypeVar


class Closable(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=Closable)


class OpenConnections(Generic[C]):
    def __init__(self) -> None:
        self._open: set[C] = set()
        self._idle = asyncio.Event()
        self._idle.set()

    def __len__(self) -> int:
        return len(self._open)

    def __iter__(self) -> Iterator[C]:
        """The open connections (a copy: one may finish while the caller iterates)."""
        return iter(list(self._open))

    def add(self, cnx: C) -> None:
        self._open.add(cnx)
        self._idle.clear()

    def discard(self, cnx: C) -> None:
        self._open.discard(cnx)
        if not self._open:
            self._idle.set()

    async def close(self, server: asyncio.Server, timeout_s: float) -> None:
        """Stop accepting, close every open connection, wait (at most ``timeout_s``)."""
        server.close()
        for cnx in list(self._open):
            cnx.close()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                await self._idle.wait()
                await server.wait_closed()
