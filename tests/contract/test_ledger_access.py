"""The managed ledger's ledger-access contract, run against both ways of reaching bookies.

``magnetar.managed_ledger.ledger_access`` states what the managed ledger relies on from the
BookKeeper client (ids in call order, recovery fences and closes, inclusive reads bounded by
what readers may see, typed errors). The same tests run with the client talking to three real
bookies over gRPC (a cluster) and through ``LocalBookie`` in this process (the standalone);
both use the real ``BookKeeper`` client and real bookies (:mod:`tests.kit.stack`). The tests
hold only the ``LedgerAccess`` protocol's types, so they check the seam, not the client's extras.
Every wait is bounded.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from magnetar.ids import EntryId, LedgerId
from magnetar.ledger.errors import (
    InvalidLedgerConfig,
    LedgerClosed,
    LedgerFenced,
    NoSuchEntry,
    NoSuchLedger,
)
from magnetar.managed_ledger.ledger_access import LedgerAccess, LedgerWriter
from tests.kit.stack import TRANSPORTS, Stack, Transport, storage_stack

WAIT = 20.0
MISSING = LedgerId(10**15)


@pytest.fixture(params=TRANSPORTS)
async def stack(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Stack]:
    transport: Transport = request.param
    async with storage_stack(tmp_path, bookies=3, transport=transport) as s:
        yield s


@pytest.fixture
def access(stack: Stack) -> LedgerAccess:
    return stack.bk


def payload(i: int) -> bytes:
    return b"entry-%03d-" % i + bytes([i % 251]) * (i % 17)


async def write(writer: LedgerWriter, n: int) -> list[EntryId]:
    async with asyncio.timeout(WAIT):
        return [await writer.append(payload(i)) for i in range(n)]


async def test_concurrent_appends_get_ids_in_call_order_and_read_back(
    access: LedgerAccess,
) -> None:
    writer = await access.create_ledger(3, 3, 2)
    async with asyncio.timeout(WAIT):
        ids = await asyncio.gather(*(writer.append(payload(i)) for i in range(20)))
    assert ids == list(range(20))
    assert writer.last_add_confirmed == 19
    await writer.close()

    reader = await access.open_ledger(writer.ledger_id)
    assert reader.metadata.is_closed
    assert reader.metadata.last_entry_id == 19
    assert reader.metadata.length == sum(len(payload(i)) for i in range(20))
    entries = await reader.read(0, 19)
    assert [(e.ledger_id, e.entry_id, e.payload) for e in entries] == [
        (writer.ledger_id, i, payload(i)) for i in range(20)
    ]
    assert [e.payload for e in await reader.read(7, 9)] == [payload(i) for i in (7, 8, 9)]
    await reader.close()


async def test_append_callback_reports_every_entry_in_id_order(access: LedgerAccess) -> None:
    writer = await access.create_ledger(3, 2, 2)  # striped: each entry on two of three bookies
    results: list[EntryId | BaseException] = []
    done = asyncio.Event()

    def on_done(result: EntryId | BaseException) -> None:
        results.append(result)
        if len(results) == 30:
            done.set()

    accepted = [writer.append_callback(payload(i), on_done) for i in range(30)]
    assert all(accepted)  # 30 small adds fit the default pending-add bounds
    assert results == []  # never before append_callback returns
    async with asyncio.timeout(WAIT):
        await done.wait()
    assert results == list(range(30))
    await writer.close()
    reader = await access.open_ledger(writer.ledger_id)
    assert [e.payload for e in await reader.read(0, 29)] == [payload(i) for i in range(30)]


async def test_append_run_reports_contiguous_ranges_in_id_order(access: LedgerAccess) -> None:
    """Runs of consecutive entries (striped over three bookies), mixed with single appends:
    every entry is reported once, ranges in id order, never inside the call."""
    writer = await access.create_ledger(3, 2, 2)
    ranges: list[tuple[int, int, BaseException | None]] = []
    done = asyncio.Event()

    def on_range(first: int, count: int, error: BaseException | None) -> None:
        ranges.append((first, count, error))
        if sum(n for _, n, _ in ranges) == 25:
            done.set()

    assert writer.append_run([payload(i) for i in range(10)], on_range) == 10
    single = await asyncio.wait_for(writer.append(payload(10)), WAIT)
    assert single == 10
    assert writer.append_run([payload(i) for i in range(11, 26)], on_range) == 15
    async with asyncio.timeout(WAIT):
        await done.wait()
    assert all(error is None for _, _, error in ranges)
    covered = [e for first, count, _ in ranges for e in range(first, first + count)]
    assert covered == [*range(10), *range(11, 26)]
    await writer.close()
    reader = await access.open_ledger(writer.ledger_id)
    assert [e.payload for e in await reader.read(0, 25)] == [payload(i) for i in range(26)]


async def test_reads_are_inclusive_and_bounded_by_the_last_entry(access: LedgerAccess) -> None:
    writer = await access.create_ledger(3, 3, 2)
    await write(writer, 3)
    await writer.close()
    reader = await access.open_ledger(writer.ledger_id)
    assert [e.entry_id for e in await reader.read(2, 2)] == [2]
    with pytest.raises(NoSuchEntry):
        await reader.read(3, 3)
    with pytest.raises(NoSuchEntry):
        await reader.read(1, 5)
    with pytest.raises(NoSuchEntry):
        await reader.read(2, 1)
    with pytest.raises(NoSuchEntry):
        await reader.read(-1, 0)


async def test_open_without_recovery_reads_up_to_the_lac_and_leaves_the_writer_alone(
    access: LedgerAccess,
) -> None:
    writer = await access.create_ledger(3, 3, 2)
    assert await write(writer, 2) == [0, 1]
    peek = await access.open_ledger(writer.ledger_id, recovery=False)
    assert not peek.metadata.is_closed
    assert [e.payload for e in await peek.read(0, 0)] == [payload(0)]
    with pytest.raises(NoSuchEntry):
        await peek.read(5, 6)
    async with asyncio.timeout(WAIT):
        assert await writer.append(payload(2)) == 2  # not fenced
    await writer.close()
    reader = await access.open_ledger(writer.ledger_id)
    assert reader.metadata.last_entry_id == 2


async def test_recovery_fences_the_old_writer_and_closes_at_its_last_entry(stack: Stack) -> None:
    access: LedgerAccess = stack.bk
    recoverer: LedgerAccess = await stack.new_client()
    writer = await access.create_ledger(3, 3, 2)
    assert await write(writer, 5) == list(range(5))
    async with asyncio.timeout(WAIT):
        recovered = await recoverer.open_ledger(writer.ledger_id)
    assert recovered.metadata.is_closed
    assert recovered.metadata.last_entry_id == 4
    assert recovered.metadata.length == sum(len(payload(i)) for i in range(5))
    with pytest.raises(LedgerFenced):
        async with asyncio.timeout(WAIT):
            await writer.append(b"after")
    with pytest.raises(LedgerFenced):
        await writer.append(b"again")
    await writer.close()  # does not reopen or overwrite the recovered metadata
    again = await recoverer.open_ledger(writer.ledger_id, recovery=False)
    assert again.metadata.last_entry_id == 4
    assert [e.payload for e in await again.read(0, 4)] == [payload(i) for i in range(5)]


async def test_recovery_of_a_ledger_without_entries_closes_it_empty(stack: Stack) -> None:
    writer = await stack.bk.create_ledger(3, 3, 2)
    recoverer: LedgerAccess = await stack.new_client()
    async with asyncio.timeout(WAIT):
        recovered = await recoverer.open_ledger(writer.ledger_id)
    assert recovered.metadata.is_closed
    assert (recovered.metadata.last_entry_id, recovered.metadata.length) == (-1, 0)
    with pytest.raises(NoSuchEntry):
        await recovered.read(0, 0)


async def test_a_closed_ledger_opens_as_it_is(access: LedgerAccess) -> None:
    writer = await access.create_ledger(3, 3, 2)
    await write(writer, 4)
    await writer.close()
    first = await access.open_ledger(writer.ledger_id, recovery=True)
    second = await access.open_ledger(writer.ledger_id, recovery=True)
    for reader in (first, second):
        assert (reader.metadata.is_closed, reader.metadata.last_entry_id) == (True, 3)
        assert reader.metadata.length == sum(len(payload(i)) for i in range(4))


async def test_delete_removes_one_ledger_and_keeps_the_others(access: LedgerAccess) -> None:
    doomed = await access.create_ledger(3, 3, 2)
    kept = await access.create_ledger(3, 3, 2)
    await write(doomed, 3)
    await write(kept, 3)
    await doomed.close()
    await kept.close()
    await access.delete_ledger(doomed.ledger_id)
    with pytest.raises(NoSuchLedger):
        await access.open_ledger(doomed.ledger_id)
    with pytest.raises(NoSuchLedger):
        await access.delete_ledger(doomed.ledger_id)
    reader = await access.open_ledger(kept.ledger_id)
    assert [e.payload for e in await reader.read(0, 2)] == [payload(i) for i in range(3)]


async def test_typed_errors_for_missing_ledgers_closed_writers_and_bad_quorums(
    access: LedgerAccess,
) -> None:
    with pytest.raises(NoSuchLedger):
        await access.open_ledger(MISSING)
    with pytest.raises(NoSuchLedger):
        await access.open_ledger(MISSING, recovery=False)
    with pytest.raises(NoSuchLedger):
        await access.delete_ledger(MISSING)
    with pytest.raises(InvalidLedgerConfig):
        await access.create_ledger(3, 2, 3)  # Aq > Wq
    with pytest.raises(InvalidLedgerConfig):
        await access.create_ledger(2, 3, 2)  # Wq > E
    writer = await access.create_ledger(3, 3, 2)
    await write(writer, 1)
    await writer.close()
    with pytest.raises(LedgerClosed):
        await writer.append(b"late")
    with pytest.raises(LedgerClosed):
        writer.append_callback(b"late", lambda result: None)
