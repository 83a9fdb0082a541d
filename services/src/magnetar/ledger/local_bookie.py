"""A bookie in this process: the :class:`BookieClient` interface without gRPC.

``magnetar standalone`` runs its bookie on the broker's loop. Talking to it over a loopback gRPC
stream cost most of the add path (serialising, HTTP/2 flow control, two gRPC threads, a task
per batch in the servicer), so :class:`~magnetar.ledger.bookie_registry.BookiePool` gives
handles a :class:`LocalBookieClient` for the bookie ids it was told are in-process. The ledger
package may not import the bookie (import contract): it takes any :class:`InProcessBookie`,
which the standalone builds from its bookie (``magnetar.bookie.local.LocalBookie``).

Adds keep :class:`BookieClient`'s contract: ``send_adds`` hands a run over and returns; each
run's callback gets the wire ``Status`` of its adds in one call once the bookie has journalled
them durably (never earlier; a failed journal write is ``INTERNAL``), or
:class:`BookieUnavailable` if the bookie refused the batch or this client closed. A run with
nothing queued ahead of it goes to the journal at once when it has room (no task is woken for
it: at a paced rate that wake-up was one loop step for every two messages); otherwise it is
queued (bounded), and one sender task submits whatever runs are queued, in order, as one
batch, waiting for room when the journal is full. Calls other than adds go straight to the
bookie; its errors become :class:`BookieUnavailable`.

Concurrency: everything on the one loop. The client owns its sender task (cancelled in
:meth:`LocalBookieClient.close`); callbacks run on the loop and must not block.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Sequence
from typing import Protocol

from magnetar.errors import MagnetarError
from magnetar.ids import BookieId
from magnetar.ledger.bookie_client import (
    AddQueue,
    AddRequest,
    AddResultCallback,
    AddRunCallback,
    one_result,
)
from magnetar.ledger.config import LedgerClientConfig
from magnetar.ledger.digest import payload_crcs
from magnetar.ledger.errors import BookieUnavailable
from magnetar.wire import bookie_pb2

IN_PROCESS_ADDRESS = "in-process"


class DurableAdds(Protocol):
    """A batch the in-process bookie journalled: ``callback(statuses)`` (wire ``Status`` codes,
    in add order) runs on the loop once the batch is durable."""

    def add_done_callback(self, callback: Callable[[list[int]], None]) -> None: ...


class InProcessBookie(Protocol):
    """What the standalone's bookie offers its in-process ledger client: adds as the client's
    own :class:`AddRequest` values (no wire message built and parsed back), answers as wire
    messages. ``submit_adds_nowait`` journals at once or returns None (journal full, or a
    ``submit_adds`` call still waiting for room: nothing done), ``submit_adds`` waits for room;
    adds are journalled in call order."""

    def submit_adds_nowait(
        self, adds: Sequence[AddRequest], payload_crcs: Sequence[int] = ()
    ) -> DurableAdds | None: ...

    async def submit_adds(
        self, adds: Sequence[AddRequest], payload_crcs: Sequence[int] = ()
    ) -> DurableAdds: ...

    async def read_entry(
        self, ledger_id: int, entry_id: int, *, fence: bool = False, master_key: bytes = b""
    ) -> bookie_pb2.ReadEntryResponse: ...

    def read_range(
        self, ledger_id: int, first: int, last: int, max_bytes: int = 0
    ) -> AsyncIterator[bookie_pb2.ReadEntryResponse]: ...

    async def read_lac(self, ledger_id: int) -> bookie_pb2.ReadLacResponse: ...

    async def fence(self, ledger_id: int, master_key: bytes) -> bookie_pb2.FenceResponse: ...

    async def delete_ledger(self, ledger_id: int) -> int: ...

    async def list_ledgers(
        self, include_ranges: bool = False
    ) -> list[bookie_pb2.LedgerListing]: ...


class LocalBookieClient:
    def __init__(
        self, bookie_id: BookieId, bookie: InProcessBookie, config: LedgerClientConfig
    ) -> None:
        self.bookie_id = bookie_id
        self.address = IN_PROCESS_ADDRESS
        self._bookie = bookie
        self._config = config
        self._adds = AddQueue(bookie_id, config.max_queued_adds)
        self._batches: dict[int, list[tuple[list[AddRequest], AddRunCallback]]] = {}
        self._next_batch = 0
        self._runner: asyncio.Task[None] | None = None
        self._closed = False

    # ------------------------------------------------------------------ adds

    def send_add(self, entry: AddRequest, callback: AddResultCallback) -> None:
        """Queue one add; ``callback`` gets its status (or error) later, on the loop."""
        self.send_adds([entry], functools.partial(one_result, callback))

    def send_adds(self, adds: list[AddRequest], callback: AddRunCallback) -> None:
        """Hand over a run of adds (to the journal, or queued behind earlier runs);
        ``callback`` gets their statuses (or the error) later, on the loop, in one call."""
        if self._closed:
            callback(BookieUnavailable(self.bookie_id, "client closed"))
            return
        # Nothing queued ahead of it here, and the journal takes it now (it refuses while a
        # batch of the sender's waits for room: the journal keeps call order).
        if not self._adds and self._submit_now(adds, callback):
            return
        if not self._adds.offer(adds, callback):
            return
        if self._runner is None or self._runner.done():  # restarted if it ever died
            self._runner = asyncio.get_running_loop().create_task(
                self._run(), name=f"local-bookie-adds-{self.bookie_id}"
            )

    def _submit_now(self, adds: list[AddRequest], callback: AddRunCallback) -> bool:
        """Journal the run at once if the journal has room now; False (nothing done) if not,
        or if the bookie refused it (the sender task then tries again and reports the error,
        so a failure never reaches the caller inside its own ``send_adds``)."""
        try:
            durable = self._bookie.submit_adds_nowait(adds, payload_crcs(adds))
        except MagnetarError:
            return False
        if durable is None:
            return False
        batch_id = self._open_batch([(adds, callback)])
        durable.add_done_callback(functools.partial(self._durable, batch_id))
        return True

    def _open_batch(self, runs: list[tuple[list[AddRequest], AddRunCallback]]) -> int:
        """Number the batch of ``runs`` and keep it until it is answered."""
        self._next_batch += 1
        self._batches[self._next_batch] = runs
        return self._next_batch

    async def _run(self) -> None:
        while True:
            await self._adds.wait()
            taken = self._adds.take(self._config.max_batch_entries)
            if len(taken) == 1:  # one run: its adds are the batch
                adds = taken[0][0]
            else:
                adds = []
                for run, _ in taken:
                    adds += run
            batch_id = self._open_batch(taken)
            crcs = payload_crcs(adds)
            try:
                # no coroutine chain per batch
                durable = self._bookie.submit_adds_nowait(adds, crcs)
                if durable is None:  # the journal is full: wait for room
                    durable = await self._bookie.submit_adds(adds, crcs)
            except MagnetarError as exc:  # closing, journal failed: the bookie is gone for us
                self._finish(batch_id, BookieUnavailable(self.bookie_id, str(exc)))
                continue
            durable.add_done_callback(functools.partial(self._durable, batch_id))

    def _durable(self, batch_id: int, statuses: list[int]) -> None:
        runs = self._batches.pop(batch_id, None)
        if runs is None:  # failed by close() meanwhile
            return
        if len(runs) == 1:
            runs[0][1](statuses)
            return
        start = 0
        for adds, callback in runs:
            end = start + len(adds)
            callback(statuses[start:end])
            start = end

    def _finish(self, batch_id: int, error: BookieUnavailable) -> None:
        for _, callback in self._batches.pop(batch_id, ()):
            callback(error)

    # ------------------------------------------------------------------ other calls

    @contextlib.contextmanager
    def _unavailable(self) -> Iterator[None]:
        """The bookie's errors as :class:`BookieUnavailable`, as :class:`BookieClient` raises."""
        try:
            yield
        except MagnetarError as exc:
            raise BookieUnavailable(self.bookie_id, str(exc)) from exc

    async def read_entry(
        self, ledger_id: int, entry_id: int, *, fence: bool = False, master_key: bytes = b""
    ) -> bookie_pb2.ReadEntryResponse:
        with self._unavailable():
            return await self._bookie.read_entry(
                ledger_id, entry_id, fence=fence, master_key=master_key
            )

    async def read_range(
        self, ledger_id: int, first: int, last: int, max_bytes: int = 0
    ) -> AsyncGenerator[bookie_pb2.ReadEntryResponse, None]:
        with self._unavailable():
            async for response in self._bookie.read_range(ledger_id, first, last, max_bytes):
                yield response

    async def read_lac(self, ledger_id: int) -> bookie_pb2.ReadLacResponse:
        with self._unavailable():
            return await self._bookie.read_lac(ledger_id)

    async def fence(self, ledger_id: int, master_key: bytes) -> bookie_pb2.FenceResponse:
        with self._unavailable():
            return await self._bookie.fence(ledger_id, master_key)

    async def delete_ledger(self, ledger_id: int) -> int:
        with self._unavailable():
            return await self._bookie.delete_ledger(ledger_id)

    async def list_ledgers(self, include_ranges: bool = False) -> list[bookie_pb2.LedgerListing]:
        with self._unavailable():
            return await self._bookie.list_ledgers(include_ranges)

    async def close(self) -> None:
        """Stop sending; queued and unanswered adds fail with :class:`BookieUnavailable`."""
        self._closed = True
        if self._runner is not None:
            self._runner.cancel()
            await asyncio.wait({self._runner})
            self._runner = None
        error = BookieUnavailable(self.bookie_id, "client closed")
        for batch_id in list(self._batches):
            self._finish(batch_id, error)
        self._adds.fail_all(error)
