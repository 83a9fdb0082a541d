"""Managed ledger behaviours over the real in-process stack: waits, readers, fencing, delete."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from magnetar.managed_ledger import (
    InitialPosition,
    ManagedLedgerConfig,
    ManagedLedgerFactory,
    ManagedLedgerFactoryConfig,
)
from magnetar.managed_ledger.errors import (
    CursorNotFound,
    InvalidPosition,
    ManagedLedgerClosed,
    ManagedLedgerFenced,
    ManagedLedgerNotFound,
)
from magnetar.managed_ledger.position import Position
from magnetar.metadata import keys
from tests.kit.stack import Stack, storage_stack

CFG = ManagedLedgerConfig(ensemble_size=3, write_quorum=2, ack_quorum=2, max_entries_per_ledger=4)
# With no durable cursor every closed ledger is trimmed at once (Pulsar's rule) unless retained.
KEEP = ManagedLedgerConfig(
    3, 2, 2, max_entries_per_ledger=4, retention_time_s=-1, retention_size_bytes=-1
)


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[Stack]:
    async with storage_stack(tmp_path) as s:
        yield s


async def test_read_or_wait_is_woken_by_add_and_times_out(stack: Stack) -> None:
    factory = ManagedLedgerFactory(stack.store, stack.bk)
    ml = await factory.open("t", CFG)
    cursor = await ml.open_cursor("sub", InitialPosition.LATEST)
    assert await cursor.read_entries_or_wait(10, timeout_s=0.05) == []
    waiting = asyncio.create_task(cursor.read_entries_or_wait(10, timeout_s=10))
    await asyncio.sleep(0.05)
    assert not waiting.done()
    pos = await ml.add_entry(b"hello")
    got = await asyncio.wait_for(waiting, 5)
    assert [(e.position, e.data) for e in got] == [(pos, b"hello")]
    await factory.close()


async def test_latest_cursor_skips_existing_entries_and_non_durable_reader(stack: Stack) -> None:
    factory = ManagedLedgerFactory(stack.store, stack.bk)
    ml = await factory.open("t", KEEP)
    first = [await ml.add_entry(f"{i}".encode()) for i in range(6)]
    latest = await ml.open_cursor("latest", InitialPosition.LATEST)
    assert latest.backlog == 0
    assert await latest.read_entries(10) == []
    reader = ml.new_non_durable_cursor(first[2])
    got = await reader.read_entries(10)
    assert [e.position for e in got] == first[2:]
    await reader.mark_delete(first[5])  # non-durable: nothing persisted, no error
    assert await stack.store.list(keys.cursors_prefix("t")) != []  # only "latest" is stored
    assert [k for k, _ in await stack.store.list(keys.cursors_prefix("t"))] == [
        keys.cursor("t", "latest")
    ]
    with pytest.raises(InvalidPosition):
        await latest.mark_delete(first[5].after().after())
    await factory.close()


async def test_entries_from_ledger_read_range(stack: Stack) -> None:
    factory = ManagedLedgerFactory(stack.store, stack.bk, ManagedLedgerFactoryConfig(0))
    ml = await factory.open("t", KEEP)
    pos = [await ml.add_entry(f"{i}".encode()) for i in range(10)]
    got = await ml.read_entries(pos[3], 5)
    assert [e.data for e in got] == [b"3", b"4", b"5", b"6", b"7"]
    await factory.close()


async def test_without_cursors_closed_ledgers_are_trimmed(stack: Stack) -> None:
    factory = ManagedLedgerFactory(stack.store, stack.bk)
    ml = await factory.open("t", CFG)
    pos = [await ml.add_entry(bytes([i])) for i in range(9)]
    await ml.trim_ledgers()
    assert [li.ledger_id for li in ml.ledgers] == [pos[8].ledger_id]
    assert await stack.store.get(keys.ledger_meta(pos[0].ledger_id)) is None
    await factory.close()


async def test_second_owner_fences_the_first(stack: Stack) -> None:
    one = ManagedLedgerFactory(stack.store, stack.bk)
    two = ManagedLedgerFactory(stack.store, stack.bk)
    ml1 = await one.open("t", CFG)
    p = await ml1.add_entry(b"a")
    ml2 = await two.open("t", CFG)  # recovers (fences) ml1's ledger, writes the info
    with pytest.raises(ManagedLedgerFenced):
        await asyncio.wait_for(ml1.add_entry(b"b"), 10)
    with pytest.raises(ManagedLedgerFenced):
        await ml1.add_entry(b"c")
    got = await ml2.read_entries(p, 10)
    assert [e.data for e in got] == [b"a"]
    await one.close()
    await two.close()


async def test_delete_cursor_and_managed_ledger(stack: Stack) -> None:
    factory = ManagedLedgerFactory(stack.store, stack.bk)
    ml = await factory.open("t", CFG)
    await ml.open_cursor("sub")
    for i in range(5):
        await ml.add_entry(bytes([i]))
    await ml.delete_cursor("sub")
    with pytest.raises(CursorNotFound):
        await ml.delete_cursor("sub")
    ledgers = [li.ledger_id for li in ml.ledgers]
    await factory.delete("t")
    with pytest.raises(ManagedLedgerClosed):
        await ml.add_entry(b"x")
    assert await stack.store.get(keys.managed_ledger_info("t")) is None
    assert await stack.store.list(keys.cursors_prefix("t")) == []
    for lid in ledgers:
        assert await stack.store.get(keys.ledger_meta(lid)) is None
    with pytest.raises(ManagedLedgerNotFound):
        await factory.delete("t")
    await factory.close()


async def test_reset_rewinds_and_persists(stack: Stack) -> None:
    factory = ManagedLedgerFactory(stack.store, stack.bk)
    ml = await factory.open("t", KEEP)
    cursor = await ml.open_cursor("sub", InitialPosition.EARLIEST)
    pos = [await ml.add_entry(bytes([i])) for i in range(6)]
    await cursor.mark_delete(pos[4])
    await cursor.reset(pos[2])
    assert cursor.mark_delete_position == pos[2].before()
    assert cursor.backlog == 4
    await factory.close()
    factory = ManagedLedgerFactory(stack.store, stack.bk)
    ml = await factory.open("t", KEEP)
    got = await ml.cursors["sub"].read_entries(10)
    assert [e.position for e in got] == pos[2:]
    await factory.close()


async def test_closed_reader_stops_holding_back_the_cache(stack: Stack) -> None:
    factory = ManagedLedgerFactory(stack.store, stack.bk)
    ml = await factory.open("t", KEEP)
    sub = await ml.open_cursor("sub", InitialPosition.EARLIEST)
    positions = [await ml.add_entry(b"x" * 1000) for _ in range(12)]
    reader = ml.new_non_durable_cursor(positions[0])  # reads nothing: pins the cache
    await sub.read_entries(12)
    await sub.mark_delete(positions[-1])
    held = factory.cache_used_bytes
    assert held >= 8 * 1000, "the idle reader should keep the older entries cached"
    reader.close()
    ml.cursor_moved()
    assert factory.cache_used_bytes < held
    await factory.close()


async def test_entries_are_cached_only_while_a_cursor_exists(stack: Stack) -> None:
    factory = ManagedLedgerFactory(stack.store, stack.bk)
    ml = await factory.open("t", KEEP)
    before = [await ml.add_entry(f"{i:04}".encode() * 250) for i in range(12)]
    # No cursor: only the tail the bookies cannot serve yet is kept (one entry here, as each
    # add is awaited before the next), held aside and not charged to the cache.
    assert factory.cache_used_bytes == 0
    sub = await ml.open_cursor("sub", InitialPosition.EARLIEST)
    got = await sub.read_entries(12)  # from the bookies
    assert [(e.position, e.data) for e in got] == [
        (p, f"{i:04}".encode() * 250) for i, p in enumerate(before)
    ]
    after = [await ml.add_entry(b"y" * 1000) for _ in range(3)]
    assert factory.cache_used_bytes >= 3 * 1000, "a cursor exists: new entries are cached"
    assert [e.position for e in await sub.read_entries(10)] == after
    await factory.close()


async def test_add_entry_callback_answers_in_order_across_rollovers(stack: Stack) -> None:
    factory = ManagedLedgerFactory(stack.store, stack.bk)
    ml = await factory.open("t", KEEP)  # 4 entries per ledger: 10 adds roll over twice
    answers: list[tuple[int, Position | None, BaseException | None]] = []
    done = asyncio.Event()

    def answer(i: int, position: Position | None, error: BaseException | None) -> None:
        answers.append((i, position, error))
        if len(answers) == 10:
            done.set()

    for i in range(10):
        assert ml.add_entry_callback(f"m{i}".encode(), functools.partial(answer, i))
    assert answers == []  # never called before the entry is durable
    await asyncio.wait_for(done.wait(), 10)
    assert [i for i, _, _ in answers] == list(range(10))
    assert all(error is None for _, _, error in answers)
    positions = [position for _, position, _ in answers]
    assert positions == sorted(positions)  # type: ignore[type-var]
    assert len({p.ledger_id for p in positions if p is not None}) == 3
    cursor = await ml.open_cursor("sub", InitialPosition.EARLIEST)
    assert [e.data for e in await cursor.read_entries(20)] == [f"m{i}".encode() for i in range(10)]
    await factory.close()


async def test_add_entry_callback_refuses_without_a_free_slot_and_fails_on_close(
    stack: Stack,
) -> None:
    factory = ManagedLedgerFactory(stack.store, stack.bk)
    ml = await factory.open("t", ManagedLedgerConfig(3, 2, 2, max_pending_adds=2))
    answers: list[tuple[object, object]] = []
    record = lambda position, error: answers.append((position, error))  # noqa: E731
    assert ml.add_entry_callback(b"a", record)
    assert ml.add_entry_callback(b"b", record)
    assert not ml.add_entry_callback(b"c", record)  # both slots taken: nothing queued
    await ml.close()  # waits for the two in flight, which were durable
    assert [error for _, error in answers] == [None, None]
    with pytest.raises(ManagedLedgerClosed):
        ml.add_entry_callback(b"d", record)
    await factory.close()


async def test_a_slot_handed_to_a_waiter_is_not_taken_by_a_later_add(stack: Stack) -> None:
    """When adds finish, their slots go to the oldest waiters, whose tasks resume a moment
    later. An add arriving in that moment must queue behind them, not take a slot left free:
    the broker's publish path relies on this to store SENDs in order when adds must wait.
    Here "0" and "1" finish together (one journal group): "0" frees the slot "2" waits for,
    "1" frees another, and "3" arrives before "2"'s task runs."""
    factory = ManagedLedgerFactory(stack.store, stack.bk)
    ml = await factory.open("t", ManagedLedgerConfig(3, 2, 2, max_pending_adds=2))
    loop = asyncio.get_running_loop()
    late: list[bool] = []

    def try_late_add() -> None:
        late.append(ml.add_entry_callback(b"3", lambda _position, _error: None))

    def first_done(_position: object, _error: object) -> None:
        loop.call_soon(try_late_add)  # queued ahead of the waiter's wakeup

    assert ml.add_entry_callback(b"0", first_done)
    assert ml.add_entry_callback(b"1", lambda _position, _error: None)
    second = await asyncio.wait_for(ml.add_entry(b"2"), 10)
    await asyncio.sleep(0.2)  # "3", if it was queued, is durable by now
    cursor = await ml.open_cursor("sub", InitialPosition.EARLIEST)
    entries = await cursor.read_entries(10)
    assert late == [False]  # the waiter's turn came first
    assert [e.data for e in entries] == [b"0", b"1", b"2"]
    assert entries[2].position == second
    await factory.close()


async def test_reserved_adds_go_in_order_and_give_back_unused_slots(stack: Stack) -> None:
    """The broker's run of SENDs: slots for the run at once (as many as are free), the adds
    in one call, the slots of entries the caller dropped given back."""
    factory = ManagedLedgerFactory(stack.store, stack.bk)
    ml = await factory.open("t", ManagedLedgerConfig(3, 2, 2, max_pending_adds=3))
    answers: list[tuple[bytes, Position | None, BaseException | None]] = []
    record = lambda data: lambda position, error: answers.append((data, position, error))  # noqa: E731
    assert ml.reserve_adds(5) == 3  # only three slots
    assert ml.reserve_adds(1) == 0
    ml.add_reserved([(b"a", record(b"a")), (b"b", record(b"b"))], unused=1)
    assert answers == []  # never called before the entries are durable
    assert ml.reserve_adds(2) == 1  # the unused one was given back
    ml.add_reserved([(b"c", record(b"c"))])
    await asyncio.wait_for(ml.add_entry(b"d"), 10)  # waits for a slot, then goes after "c"
    assert [(data, error) for data, _, error in answers] == [
        (b"a", None),
        (b"b", None),
        (b"c", None),
    ]
    positions = [position for _, position, _ in answers]
    assert positions == sorted(positions)  # type: ignore[type-var]
    cursor = await ml.open_cursor("sub", InitialPosition.EARLIEST)
    assert [e.data for e in await cursor.read_entries(10)] == [b"a", b"b", b"c", b"d"]
    await ml.close()
    with pytest.raises(ManagedLedgerClosed):
        ml.reserve_adds(1)
    await factory.close()


async def test_a_reserved_run_is_answered_in_stretches_in_order(stack: Stack) -> None:
    """The broker's run of SENDs as one call (``add_reserved_run``): the callback hears each
    stretch of durable adds once, from index 0 on, with increasing positions, though the run
    crosses two rollovers; its infos reach the cache. A run callback that raises is logged
    and the adds after it still go."""
    factory = ManagedLedgerFactory(stack.store, stack.bk)
    ml = await factory.open("t", KEEP)  # 4 entries per ledger
    cursor = await ml.open_cursor("sub", InitialPosition.EARLIEST)
    heard: list[tuple[int, list[Position]]] = []
    done = asyncio.Event()

    def answer(index: int, positions: list[Position] | None, error: BaseException | None) -> None:
        assert positions is not None
        assert error is None
        heard.append((index, positions))
        if sum(len(p) for _, p in heard) == 10:
            done.set()

    datas = [b"r%d" % i for i in range(10)]
    assert ml.reserve_adds(10) == 10
    ml.add_reserved_run(datas, answer, infos=[("info", i) for i in range(10)])
    assert heard == []
    await asyncio.wait_for(done.wait(), 10)
    starts = [index for index, _ in heard]
    assert starts == sorted(starts)
    assert starts[0] == 0
    assert [i for index, p in heard for i in range(index, index + len(p))] == list(range(10))
    positions = [position for _, p in heard for position in p]
    assert positions == sorted(positions)
    assert len({p.ledger_id for p in positions}) == 3
    entries = await cursor.read_entries(20)
    assert [e.data for e in entries] == datas

    def broken(index: int, positions: list[Position] | None, error: BaseException | None) -> None:
        raise RuntimeError("a broken caller")

    assert ml.reserve_adds(2) == 2
    with capture_logs() as logs:
        ml.add_reserved_run([b"x", b"y"], broken)
        await asyncio.wait_for(ml.add_entry(b"z"), 10)
    assert any(entry["event"] == "add_callback_failed" for entry in logs)
    assert [e.data for e in await cursor.read_entries(20)] == [b"x", b"y", b"z"]
    await factory.close()


async def test_a_cached_read_reads_what_a_read_would_or_nothing(stack: Stack) -> None:
    """``read_cached`` (the dispatcher's no-await read) hands out what ``read_entries`` would,
    across a ledger rollover; with an entry out of the cache it reads nothing and moves
    nothing, and the awaited read then fetches from the bookies."""
    factory = ManagedLedgerFactory(stack.store, stack.bk)
    ml = await factory.open("cached-read", KEEP)
    cursor = await ml.open_cursor("sub", InitialPosition.EARLIEST)
    async with asyncio.timeout(20):
        added = [await ml.add_entry(b"entry-%d" % i) for i in range(6)]
    got = cursor.read_cached(5)
    assert got is not None
    assert [(e.position, e.data) for e in got] == [
        (p, b"entry-%d" % i) for i, p in enumerate(added[:5])
    ]
    assert [e.position for e in cursor.read_cached(5) or []] == added[5:]
    assert cursor.read_cached(5) == []
    await factory.close()

    cold = ManagedLedgerFactory(
        stack.store, stack.bk, ManagedLedgerFactoryConfig(cache_max_bytes=0)
    )
    ml = await cold.open("cached-read", KEEP)
    reader = ml.new_non_durable_cursor(added[0])
    assert reader.read_cached(5) is None  # not cached: nothing read
    async with asyncio.timeout(20):
        again = await reader.read_entries(5)
    assert [e.position for e in again] == added[:5]
    await cold.close()
