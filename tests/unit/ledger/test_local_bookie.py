"""The in-process bookie transport: LocalBookieClient over a real Bookie (journal + RocksDB in a
temp dir), and a BookKeeper client that reaches its bookie only that way (the registered gRPC
address leads nowhere)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from magnetar.bookie.bookie import Bookie
from magnetar.bookie.config import BookieConfig
from magnetar.bookie.errors import BookieClosed
from magnetar.bookie.journal import JournalConfig
from magnetar.bookie.local import LocalBookie
from magnetar.bookie.registration import Registration
from magnetar.ids import BookieId, EntryId
from magnetar.ledger.bookie_client import AddRequest
from magnetar.ledger.client import BookKeeper
from magnetar.ledger.config import LedgerClientConfig
from magnetar.ledger.errors import BookieUnavailable, LedgerError
from magnetar.ledger.local_bookie import LocalBookieClient
from magnetar.managed_ledger import ManagedLedgerFactory
from magnetar.managed_ledger.config import ManagedLedgerConfig
from magnetar.metadata.factory import open_store
from magnetar.wire import bookie_pb2 as pb

BID = BookieId("local-1")
MK = b"master-key"


@pytest.fixture
async def bookie(tmp_path: Path) -> AsyncIterator[Bookie]:
    b = await Bookie.open(BookieConfig(data_dir=tmp_path, journal=JournalConfig(sync=True)))
    yield b
    await b.close()


def add(ledger: int, entry: int, payload: bytes) -> AddRequest:
    return AddRequest(ledger, entry, entry - 1, payload, entry, MK)


async def send_all(client: LocalBookieClient, adds: list[AddRequest]) -> list[object]:
    loop = asyncio.get_running_loop()
    futures: list[asyncio.Future[object]] = []
    for a in adds:
        future: asyncio.Future[object] = loop.create_future()
        futures.append(future)
        client.send_add(a, future.set_result)
    async with asyncio.timeout(10):
        return list(await asyncio.gather(*futures))


async def test_adds_are_durable_and_readable_in_order(bookie: Bookie) -> None:
    client = LocalBookieClient(BID, LocalBookie(bookie), LedgerClientConfig(max_batch_entries=7))
    try:
        results = await send_all(client, [add(5, i, b"x%d" % i) for i in range(50)])
        assert results == [pb.OK] * 50
        one = await client.read_entry(5, 17)
        assert (one.status, one.entry.payload, one.entry.digest) == (pb.OK, b"x17", 17)
        ranged = [r async for r in client.read_range(5, 10, 14)]
        assert [r.entry.payload for r in ranged] == [b"x%d" % i for i in range(10, 15)]
        lac = await client.read_lac(5)
        assert (lac.status, lac.last_add_confirmed, lac.last_entry_id) == (pb.OK, 48, 49)
        listed = await client.list_ledgers()
        assert [(x.ledger_id, x.entry_count) for x in listed] == [(5, 50)]
    finally:
        await client.close()


async def test_fence_refuses_later_adds_and_delete(bookie: Bookie) -> None:
    client = LocalBookieClient(BID, LocalBookie(bookie), LedgerClientConfig())
    try:
        assert await send_all(client, [add(3, 0, b"a")]) == [pb.OK]
        fenced = await client.fence(3, MK)
        assert (fenced.status, fenced.last_entry_id) == (pb.OK, 0)
        assert await send_all(client, [add(3, 1, b"b")]) == [pb.FENCED]
        assert await client.delete_ledger(3) == pb.OK
        assert (await client.read_entry(3, 0)).status == pb.NO_SUCH_LEDGER
    finally:
        await client.close()


async def test_closed_client_and_closed_bookie_fail_adds(tmp_path: Path) -> None:
    b = await Bookie.open(BookieConfig(data_dir=tmp_path, journal=JournalConfig(sync=False)))
    client = LocalBookieClient(BID, LocalBookie(b), LedgerClientConfig())
    await b.close()
    [result] = await send_all(client, [add(1, 0, b"a")])
    assert isinstance(result, BookieUnavailable)
    with pytest.raises(BookieUnavailable):
        await client.fence(1, MK)
    with pytest.raises(BookieUnavailable):
        await client.read_entry(1, 0, fence=True, master_key=MK)
    await client.close()
    [result] = await send_all(client, [add(1, 1, b"b")])
    assert isinstance(result, BookieUnavailable)


class _FailingRangeBookie(LocalBookie):
    """Fault injection: the bookie fails part-way through a range read."""

    async def read_range(
        self, ledger_id: int, first: int, last: int, max_bytes: int = 0
    ) -> AsyncIterator[pb.ReadEntryResponse]:
        async for response in super().read_range(ledger_id, first, last, max_bytes):
            yield response
            raise BookieClosed("the bookie is closing")


async def test_a_bookie_error_in_a_range_read_is_bookie_unavailable(bookie: Bookie) -> None:
    client = LocalBookieClient(BID, _FailingRangeBookie(bookie), LedgerClientConfig())
    try:
        assert await send_all(client, [add(1, 0, b"a"), add(1, 1, b"b")]) == [pb.OK, pb.OK]
        got: list[int] = []

        async def read_all() -> None:
            async for response in client.read_range(1, 0, 1):
                got.append(response.entry_id)

        with pytest.raises(BookieUnavailable):
            await read_all()
        assert got == [0]
    finally:
        await client.close()


async def test_bookkeeper_uses_the_in_process_bookie(bookie: Bookie) -> None:
    store = await open_store(f"memory://{uuid.uuid4().hex}", session_timeout_s=5.0)
    registration = Registration(store, BID, "127.0.0.1:9")  # nothing listens: gRPC would fail
    task = asyncio.create_task(registration.run())
    try:
        async with asyncio.timeout(5):
            await registration.wait_registered()
        config = LedgerClientConfig(add_timeout_s=2.0, read_timeout_s=2.0)
        bk = await BookKeeper.start(store, config, local_bookies={BID: LocalBookie(bookie)})
        try:
            async with asyncio.timeout(20):
                handle = await bk.create_ledger(1, 1, 1)
                ids = await asyncio.gather(*(handle.append(b"m%d" % i) for i in range(200)))
                assert ids == [EntryId(i) for i in range(200)]
                await handle.close()
                reader = await bk.open_ledger(handle.ledger_id)
                entries = await reader.read(0, 199)
            assert [e.payload for e in entries] == [b"m%d" % i for i in range(200)]
        finally:
            await bk.close()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await registration.unregister()
        await store.close()


async def test_appends_keep_call_order_when_the_writer_runs_out_of_room(bookie: Bookie) -> None:
    """Tiny pending-add bounds: adds that must wait (in a task) and adds handed over at once
    (append_nowait) interleave, across rollovers, and positions still follow call order."""
    store = await open_store(f"memory://{uuid.uuid4().hex}", session_timeout_s=5.0)
    registration = Registration(store, BID, "127.0.0.1:9")
    task = asyncio.create_task(registration.run())
    try:
        async with asyncio.timeout(5):
            await registration.wait_registered()
        config = LedgerClientConfig(max_pending_adds=3, max_pending_add_bytes=64)
        bk = await BookKeeper.start(store, config, local_bookies={BID: LocalBookie(bookie)})
        factory = ManagedLedgerFactory(store, bk)
        try:
            ml_config = ManagedLedgerConfig(
                ensemble_size=1, write_quorum=1, ack_quorum=1, max_entries_per_ledger=40
            )
            ml = await factory.open("public/default/persistent/order", ml_config)
            async with asyncio.timeout(30):
                positions = await asyncio.gather(
                    *(ml.add_entry(b"e%03d" % i * (1 + i % 7)) for i in range(150))
                )
            assert positions == sorted(positions)
            assert len(set(positions)) == 150
            assert len({p.ledger_id for p in positions}) >= 3  # rolled over on the way
        finally:
            await factory.close()
            await bk.close()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await registration.unregister()
        await store.close()


async def test_a_small_add_does_not_overtake_a_big_one_waiting_for_room(bookie: Bookie) -> None:
    """The writer holds 64 bytes: the third add (40 bytes) must wait in a task, and the fourth
    (4 bytes) would fit at once; it waits behind the third, so positions follow call order."""
    store = await open_store(f"memory://{uuid.uuid4().hex}", session_timeout_s=5.0)
    registration = Registration(store, BID, "127.0.0.1:9")
    task = asyncio.create_task(registration.run())
    try:
        async with asyncio.timeout(5):
            await registration.wait_registered()
        config = LedgerClientConfig(max_pending_add_bytes=64)
        bk = await BookKeeper.start(store, config, local_bookies={BID: LocalBookie(bookie)})
        factory = ManagedLedgerFactory(store, bk)
        try:
            ml = await factory.open("public/default/persistent/small", ManagedLedgerConfig(1, 1, 1))
            async with asyncio.timeout(30):
                positions = await asyncio.gather(
                    *(ml.add_entry(bytes(size)) for size in (30, 30, 40, 4, 4))
                )
            assert [p.entry_id for p in positions] == [0, 1, 2, 3, 4]
        finally:
            await factory.close()
            await bk.close()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await registration.unregister()
        await store.close()


@pytest.fixture
async def narrow_bookie(tmp_path: Path) -> AsyncIterator[Bookie]:
    """A bookie whose journal queue holds two records: the third add sent in one go finds it
    full and must wait for room."""
    journal = JournalConfig(sync=True, queue_records=2)
    b = await Bookie.open(BookieConfig(data_dir=tmp_path, journal=journal))
    yield b
    await b.close()


async def test_a_run_with_nothing_ahead_is_journalled_without_the_sender_task(
    bookie: Bookie,
) -> None:
    client = LocalBookieClient(BID, LocalBookie(bookie), LedgerClientConfig())
    try:
        assert await send_all(client, [add(8, i, b"a") for i in range(5)]) == [pb.OK] * 5
        assert client._runner is None  # each went to the journal inside its send_adds
    finally:
        await client.close()


async def test_an_add_sent_while_another_waits_for_room_goes_behind_it(
    narrow_bookie: Bookie,
) -> None:
    """Adds 0 and 1 fill the journal queue; add 2 waits for room in the sender task. Add 3 is
    sent from add 0's answer, just as room is made and before the sender has handed add 2
    over: it must not get ahead of add 2 (the answers come in journal order)."""
    client = LocalBookieClient(BID, LocalBookie(narrow_bookie), LedgerClientConfig())
    loop = asyncio.get_running_loop()
    order: list[int] = []
    done = [loop.create_future() for _ in range(4)]

    def send(i: int) -> None:
        def answered(status: int) -> None:
            order.append(i)
            done[i].set_result(status)
            if i == 0:
                loop.call_soon(send, 3)  # runs before the sender's wait for room ends

        client.send_add(add(9, i, b"p%d" % i), answered)

    try:
        for i in range(3):
            send(i)
        async with asyncio.timeout(10):
            assert await asyncio.gather(*done) == [pb.OK] * 4
        assert order == [0, 1, 2, 3]
    finally:
        await client.close()


async def test_adds_go_on_after_the_sender_task_died(narrow_bookie: Bookie) -> None:
    client = LocalBookieClient(BID, LocalBookie(narrow_bookie), LedgerClientConfig())
    try:
        # Three in one go: the third waits for room, in the sender task.
        assert await send_all(client, [add(8, i, b"a") for i in range(3)]) == [pb.OK] * 3
        runner = client._runner
        assert runner is not None
        runner.cancel()  # as if it had died of an unexpected error
        with pytest.raises(asyncio.CancelledError):
            await runner
        assert await send_all(client, [add(8, 3 + i, b"b") for i in range(3)]) == [pb.OK] * 3
    finally:
        await client.close()


async def test_append_callback_confirms_in_order_and_fails_on_abandon(bookie: Bookie) -> None:
    """append_callback: outcomes arrive in id order, never before the call returns, mixed with
    future-based appends; a callback may append again; abandoning fails the rest."""
    store = await open_store(f"memory://{uuid.uuid4().hex}", session_timeout_s=5.0)
    registration = Registration(store, BID, "127.0.0.1:9")
    task = asyncio.create_task(registration.run())
    try:
        async with asyncio.timeout(5):
            await registration.wait_registered()
        bk = await BookKeeper.start(
            store, LedgerClientConfig(), local_bookies={BID: LocalBookie(bookie)}
        )
        try:
            handle = await bk.create_ledger(1, 1, 1)
            results: list[object] = []
            done = asyncio.get_running_loop().create_future()

            def on_added(result: EntryId | BaseException) -> None:
                results.append(result)
                if len(results) == 5:  # re-entrant: append again from inside the completion
                    assert handle.append_callback(b"again", on_added)
                if len(results) == 16 and not done.done():
                    done.set_result(None)

            futures = []
            for i in range(20):
                if i % 4 == 3:
                    future = handle.append_nowait(b"f%d" % i)
                    assert future is not None
                    futures.append(future)
                else:
                    assert handle.append_callback(b"c%d" % i, on_added)
                assert len(results) == 0  # never completed inside the call
            async with asyncio.timeout(10):
                await done
                ids = await asyncio.gather(*futures)
            assert ids == [EntryId(i) for i in range(3, 20, 4)]
            assert results == [EntryId(i) for i in range(20) if i % 4 != 3] + [EntryId(20)]

            failed: list[object] = []
            assert handle.append_callback(b"late", failed.append)
            await handle.abandon()
            assert len(failed) == 1
            assert isinstance(failed[0], LedgerError)
        finally:
            await bk.close()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await registration.unregister()
        await store.close()
