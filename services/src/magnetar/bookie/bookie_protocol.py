"""What the bookie core takes and gives (BookKeeper's BookieProtocol, as in-process values).

Requests: :class:`AddOp` (or any value with :class:`AddFields`). Results: a :class:`Status`
per operation, :class:`ReadResult`, :class:`LacResult`, :class:`LedgerListing`, and
:class:`PendingAdds` for a batch of adds whose durability is still to come. These are not the
wire's messages: :mod:`magnetar.bookie.local` is the one place they become ``bookie_pb2``.

Invariants: values are frozen. :class:`PendingAdds` never reports ``OK`` for an add whose
journal write failed or was cancelled: it reports ``INTERNAL`` instead.

Who uses them: the bookie core (:mod:`magnetar.bookie.bookie`) builds the results on the event
loop; :mod:`magnetar.bookie.local` and the gRPC servicer read them there.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from magnetar.bookie.errors import BookieError
from magnetar.bookie.ledger_storage import StoredEntry


class Status(enum.Enum):
    """Outcome of a bookie operation; mirrors the wire's ``Status``."""

    OK = "ok"
    NO_SUCH_LEDGER = "no_such_ledger"
    NO_SUCH_ENTRY = "no_such_entry"
    FENCED = "fenced"
    READ_ONLY = "read_only"
    UNAUTHORIZED = "unauthorized"
    BAD_REQUEST = "bad_request"
    INTERNAL = "internal"
    TOO_MANY_REQUESTS = "too_many_requests"


@dataclass(frozen=True, slots=True)
class AddOp:
    ledger_id: int
    entry_id: int
    lac: int
    payload: bytes
    digest: int
    master_key: bytes
    recovery: bool = False


class AddFields(Protocol):
    """What an add needs: :class:`AddOp`, or an in-process client's own add value."""

    @property
    def ledger_id(self) -> int: ...
    @property
    def entry_id(self) -> int: ...
    @property
    def lac(self) -> int: ...
    @property
    def payload(self) -> bytes: ...
    @property
    def digest(self) -> int: ...
    @property
    def master_key(self) -> bytes: ...
    @property
    def recovery(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class ReadResult:
    status: Status
    entry: StoredEntry | None = None
    lac: int = -1


@dataclass(frozen=True, slots=True)
class LacResult:
    status: Status
    lac: int = -1
    last_entry_id: int = -1


@dataclass(frozen=True, slots=True)
class LedgerListing:
    ledger_id: int
    entry_count: int
    last_entry_id: int
    fenced: bool
    ranges: tuple[tuple[int, int], ...] = ()


class PendingAdds:
    """Adds of one batch, submitted in order; :meth:`wait` gives their statuses in order.

    ``statuses`` holds the check result of every op; the OK ones share ``durable``, the
    journal's future for the whole batch.
    """

    def __init__(self, statuses: list[Status], durable: asyncio.Future[None] | None) -> None:
        self._statuses = statuses
        self._durable = durable

    def add_done_callback(self, callback: Callable[[list[Status]], None]) -> None:
        """Call ``callback(statuses)`` once durable (soon, on the loop, if nothing was accepted).

        A failed or cancelled journal write turns every OK into ``INTERNAL``, as :meth:`wait`.
        """
        statuses = self._statuses
        if self._durable is None:
            asyncio.get_running_loop().call_soon(callback, list(statuses))
            return

        def done(future: asyncio.Future[None]) -> None:
            if future.cancelled() or future.exception() is not None:
                callback([Status.INTERNAL if s is Status.OK else s for s in statuses])
            else:
                callback(list(statuses))

        self._durable.add_done_callback(done)

    async def wait(self) -> list[Status]:
        if self._durable is None:
            return list(self._statuses)
        try:
            await self._durable
        except BookieError:
            return [Status.INTERNAL if s is Status.OK else s for s in self._statuses]
        return list(self._statuses)
