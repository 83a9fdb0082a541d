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

    ``statuses`` holds the check result of every op. The OK ones went to the journal as one
    unit: the bookie calls :meth:`complete` when the journal reports that unit's outcome (on
    the loop, inside the journal's delivery), and the callbacks run there, synchronously. A
    batch with nothing accepted (``durable`` False) is complete at once.
    """

    __slots__ = ("_callbacks", "_result", "_statuses")

    def __init__(self, statuses: list[Status], *, durable: bool) -> None:
        self._statuses = statuses
        self._result: list[Status] | None = None if durable else statuses
        self._callbacks: list[Callable[[list[Status]], None]] = []

    def complete(self, error: BaseException | None) -> None:
        """The journal's outcome for the accepted adds (None: durable and applied)."""
        if self._result is not None:
            return
        statuses = self._statuses
        if error is not None:
            statuses = [Status.INTERNAL if s is Status.OK else s for s in statuses]
        self._result = statuses
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(list(statuses))

    def add_done_callback(self, callback: Callable[[list[Status]], None]) -> None:
        """Call ``callback(statuses)`` once durable: inside the journal's delivery, or soon (on
        the loop) if already complete. A failed journal write turns every OK into
        ``INTERNAL``, as :meth:`wait`."""
        if self._result is not None:
            asyncio.get_running_loop().call_soon(callback, list(self._result))
            return
        self._callbacks.append(callback)

    async def wait(self) -> list[Status]:
        if self._result is None:
            done: asyncio.Future[list[Status]] = asyncio.get_running_loop().create_future()

            def settle(statuses: list[Status]) -> None:
                if not done.done():  # the waiter may have been cancelled
                    done.set_result(statuses)

            self._callbacks.append(settle)
            return await done
        return list(self._result)
