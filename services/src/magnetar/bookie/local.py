"""The bookie's wire-level face without gRPC: the one place :class:`Bookie` results become wire
messages (``bookie_pb2``), shared by the gRPC servicer and by in-process callers.

``magnetar standalone`` runs the broker and its bookie in one process on one loop; its ledger
client reaches the bookie through a :class:`LocalBookie` instead of a loopback gRPC stream (the
``magnetar.ledger`` package cannot import the bookie: it takes any object with these methods,
see ``magnetar.ledger.local_bookie``). The gRPC servicer wraps the same methods, so both paths
answer identically; only the transport differs.

Adds: :meth:`LocalBookie.submit_adds_nowait` (or :meth:`LocalBookie.submit_adds`, which waits
while the journal queue is full) checks and journals a batch in call order and returns a
:class:`WireAdds` whose callback gets the batch's wire statuses when the journal has fsynced
(and applied) it — an OK status is never given before that.

Errors: :class:`~magnetar.bookie.errors.BookieError` (the bookie is closing, its journal
failed) propagates; expected conditions are ``Status`` codes in the responses.

Concurrency: every method runs on the bookie's loop; no state of its own besides the bookie.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Sequence

from magnetar.bookie.bookie import Bookie
from magnetar.bookie.bookie_protocol import AddFields, AddOp, PendingAdds, Status
from magnetar.bookie.ledger_storage import StoredEntry
from magnetar.wire import bookie_pb2 as pb

READ_CHUNK_BYTES = 4 * 1024 * 1024
# ListEntries: entries per chunk by default and at most (an EntryInfo is ~20 bytes on the wire).
LIST_CHUNK_ENTRIES = 4096
MAX_LIST_CHUNK_ENTRIES = 65536

WIRE_STATUS: dict[Status, pb.Status.ValueType] = {
    Status.OK: pb.OK,
    Status.NO_SUCH_LEDGER: pb.NO_SUCH_LEDGER,
    Status.NO_SUCH_ENTRY: pb.NO_SUCH_ENTRY,
    Status.FENCED: pb.FENCED,
    Status.READ_ONLY: pb.READ_ONLY,
    Status.UNAUTHORIZED: pb.UNAUTHORIZED,
    Status.BAD_REQUEST: pb.BAD_REQUEST,
    Status.INTERNAL: pb.INTERNAL,
    Status.TOO_MANY_REQUESTS: pb.TOO_MANY_REQUESTS,
}


def wire_statuses(statuses: list[Status]) -> list[int]:
    """``statuses`` as wire codes; all-OK (the usual batch) without a lookup per add."""
    if statuses.count(Status.OK) == len(statuses):
        return [pb.OK] * len(statuses)
    return [WIRE_STATUS[s] for s in statuses]


def wire_entry(entry: StoredEntry) -> pb.Entry:
    return pb.Entry(
        ledger_id=entry.ledger_id,
        entry_id=entry.entry_id,
        last_add_confirmed=entry.lac,
        payload=entry.payload,
        digest=entry.digest,
    )


def add_op(add: pb.AddEntry) -> AddOp:
    entry = add.entry
    return AddOp(
        ledger_id=entry.ledger_id,
        entry_id=entry.entry_id,
        lac=entry.last_add_confirmed,
        payload=entry.payload,
        digest=entry.digest,
        master_key=add.master_key,
        recovery=add.recovery,
    )


class WireAdds:
    """A journalled batch as the in-process client sees it: its callback gets the wire
    statuses once durable (no OK before the fsync). One per batch; callbacks, no futures."""

    __slots__ = ("_pending",)

    def __init__(self, pending: PendingAdds) -> None:
        self._pending = pending

    def add_done_callback(self, callback: Callable[[list[int]], None]) -> None:
        self._pending.add_done_callback(functools.partial(_call_with_wire, callback))


def _call_with_wire(callback: Callable[[list[int]], None], statuses: list[Status]) -> None:
    callback(wire_statuses(statuses))


class LocalBookie:
    def __init__(self, bookie: Bookie) -> None:
        self._bookie = bookie

    def submit_adds_nowait(
        self, adds: Sequence[AddFields], payload_crcs: Sequence[int] = ()
    ) -> WireAdds | None:
        """Journal ``adds`` in order at once; None (nothing journalled) when the journal has
        no room now, then use :meth:`submit_adds`.

        The adds are the caller's own values (no wire message in between): anything with the
        fields of :class:`~magnetar.bookie.bookie_protocol.AddOp`. ``payload_crcs``: as
        :meth:`Bookie.submit_adds_nowait` takes them."""
        pending = self._bookie.submit_adds_nowait(adds, payload_crcs)
        return None if pending is None else WireAdds(pending)

    async def submit_adds(
        self, adds: Sequence[AddFields], payload_crcs: Sequence[int] = ()
    ) -> WireAdds:
        """Journal ``adds`` in order, waiting while the journal queue is full."""
        return WireAdds(await self._bookie.submit_adds(adds, payload_crcs))

    async def read_entry(
        self, ledger_id: int, entry_id: int, *, fence: bool = False, master_key: bytes = b""
    ) -> pb.ReadEntryResponse:
        result = await self._bookie.read_entry(
            ledger_id, entry_id, fence=fence, master_key=master_key
        )
        response = pb.ReadEntryResponse(
            status=WIRE_STATUS[result.status],
            ledger_id=ledger_id,
            entry_id=entry_id,
            last_add_confirmed=result.lac,
        )
        if result.entry is not None:
            response.entry_id = result.entry.entry_id
            response.entry.CopyFrom(wire_entry(result.entry))
        return response

    async def read_range(
        self, ledger_id: int, first: int, last: int, max_bytes: int = 0
    ) -> AsyncIterator[pb.ReadEntryResponse]:
        """Entries first..last in order (up to ``max_bytes``; 0: no limit); a status if none."""
        budget = max_bytes
        sent = False
        while first <= last:
            chunk = READ_CHUNK_BYTES if budget == 0 else min(budget, READ_CHUNK_BYTES)
            status, entries = await self._bookie.read_range(ledger_id, first, last, chunk)
            if status is not Status.OK or (not entries and not sent):
                final = status if status is not Status.OK else Status.NO_SUCH_ENTRY
                yield pb.ReadEntryResponse(
                    status=WIRE_STATUS[final], ledger_id=ledger_id, entry_id=first
                )
                return
            if not entries:
                return
            for entry in entries:
                yield pb.ReadEntryResponse(
                    status=pb.OK,
                    ledger_id=entry.ledger_id,
                    entry_id=entry.entry_id,
                    entry=wire_entry(entry),
                    last_add_confirmed=entry.lac,
                )
                sent = True
                if budget:
                    budget = max(0, budget - len(entry.payload))
            first = entries[-1].entry_id + 1
            if max_bytes and budget == 0:
                return

    async def read_lac(self, ledger_id: int) -> pb.ReadLacResponse:
        result = self._bookie.read_lac(ledger_id)
        return pb.ReadLacResponse(
            status=WIRE_STATUS[result.status],
            last_add_confirmed=result.lac,
            last_entry_id=result.last_entry_id,
        )

    async def fence(self, ledger_id: int, master_key: bytes) -> pb.FenceResponse:
        result = await self._bookie.fence(ledger_id, master_key)
        return pb.FenceResponse(
            status=WIRE_STATUS[result.status],
            last_add_confirmed=result.lac,
            last_entry_id=result.last_entry_id,
        )

    async def delete_ledger(self, ledger_id: int) -> int:
        return int(WIRE_STATUS[await self._bookie.delete_ledger(ledger_id)])

    async def list_entries(
        self, first_ledger_id: int, last_ledger_id: int, max_chunk_entries: int = 0
    ) -> AsyncIterator[pb.EntryListingChunk]:
        """The audit's listing (``ListEntries``): bounded chunks, ``last_ledger_id`` 0 = no end."""
        chunk = min(max_chunk_entries or LIST_CHUNK_ENTRIES, MAX_LIST_CHUNK_ENTRIES)
        last = last_ledger_id or (1 << 64) - 1
        async for entries in self._bookie.list_entries(first_ledger_id, last, chunk):
            yield pb.EntryListingChunk(
                entries=[
                    pb.EntryInfo(
                        ledger_id=e.ledger_id, entry_id=e.entry_id, length=e.length, digest=e.digest
                    )
                    for e in entries
                ]
            )

    async def list_ledgers(self, include_ranges: bool = False) -> list[pb.LedgerListing]:
        return [
            pb.LedgerListing(
                ledger_id=listing.ledger_id,
                entry_count=listing.entry_count,
                last_entry_id=listing.last_entry_id,
                fenced=listing.fenced,
                ranges=[pb.EntryRange(first=f, last=la) for f, la in listing.ranges],
            )
            for listing in await self._bookie.list_ledgers(include_ranges)
        ]
