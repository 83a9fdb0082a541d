"""Runs of entries through the write path: ``WriteHandle.append_run`` and the managed ledger's
run of adds, over real bookies (journal + RocksDB in temp dirs) reached in-process.

A bookie that answers a run only partly cannot be made to by its API (a run of one ledger is
checked and journalled as one unit), so one test wraps the in-process face of a real bookie to
journal only the head of a run and fail the rest, the way a bookie whose journal broke
mid-batch would; every other bookie is unwrapped."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import crc32c
import pytest

from magnetar.bookie.bookie import Bookie
from magnetar.bookie.bookie_protocol import AddFields
from magnetar.bookie.config import BookieConfig
from magnetar.bookie.journal import JournalConfig
from magnetar.bookie.local import LocalBookie, WireAdds
from magnetar.bookie.registration import Registration
from magnetar.ids import BookieId
from magnetar.ledger.client import BookKeeper
from magnetar.ledger.config import LedgerClientConfig
from magnetar.ledger.errors import BookieRejected, LedgerClosed, LedgerFenced
from magnetar.managed_ledger import ManagedLedgerFactory, Position
from magnetar.managed_ledger.config import InitialPosition, ManagedLedgerConfig
from magnetar.metadata import MetadataStore
from magnetar.metadata.factory import open_store
from magnetar.wire import bookie_pb2 as pb

IDS = [BookieId(f"local-{i}") for i in range(3)]

Range = tuple[int, int, BaseException | None]


class _ScriptedBookie(LocalBookie):
    """A real bookie's in-process face, with two faults the test can arm per bookie:
    ``keep`` journals only the first ``keep`` adds of the next batch and answers INTERNAL for
    the rest, once ``gate`` is done; ``opens`` completes ``gate`` once a batch is durable."""

    def __init__(self, bookie: Bookie) -> None:
        super().__init__(bookie)
        self.keep: int | None = None
        self.gate: asyncio.Future[None] | None = None
        self.opens: asyncio.Future[None] | None = None

    def submit_adds_nowait(
        self, adds: Sequence[AddFields], payload_crcs: Sequence[int] = ()
    ) -> WireAdds | None:
        keep = self.keep
        if keep is None:
            durable = super().submit_adds_nowait(adds, payload_crcs)
            opens = self.opens
            if durable is not None and opens is not None:
                durable.add_done_callback(lambda _statuses: opens.done() or opens.set_result(None))
            return durable
        self.keep = None
        head = super().submit_adds_nowait(adds[:keep], payload_crcs[:keep])
        assert head is not None
        return _PartlyDurable(head, len(adds) - keep, self.gate)  # type: ignore[return-value]


@dataclass
class _PartlyDurable:
    head: WireAdds
    failed: int
    gate: asyncio.Future[None] | None

    def add_done_callback(self, callback: Callable[[list[int]], None]) -> None:
        def durable(statuses: list[int]) -> None:
            answer = statuses + [pb.INTERNAL] * self.failed
            if self.gate is None:
                callback(answer)
            else:
                self.gate.add_done_callback(lambda _gate: callback(answer))

        self.head.add_done_callback(durable)


@dataclass
class _Stack:
    store: MetadataStore
    faces: dict[BookieId, _ScriptedBookie]
    bookies: dict[BookieId, Bookie]

    async def bookkeeper(self, config: LedgerClientConfig) -> BookKeeper:
        return await BookKeeper.start(self.store, config, local_bookies=dict(self.faces))


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[_Stack]:
    store = await open_store(f"memory://{uuid.uuid4().hex}", session_timeout_s=5.0)
    bookies: dict[BookieId, Bookie] = {}
    registrations = []
    tasks = []
    try:
        for bid in IDS:
            config = BookieConfig(data_dir=tmp_path / bid, journal=JournalConfig(sync=True))
            bookies[bid] = await Bookie.open(config)
            registration = Registration(store, bid, "127.0.0.1:9")  # gRPC would lead nowhere
            registrations.append(registration)
            tasks.append(asyncio.create_task(registration.run()))
        async with asyncio.timeout(5):
            for registration in registrations:
                await registration.wait_registered()
        yield _Stack(store, {b: _ScriptedBookie(bookies[b]) for b in IDS}, bookies)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for registration in registrations:
            await registration.unregister()
        for bookie in bookies.values():
            await bookie.close()
        await store.close()


class _Recorder:
    """A run callback that records what it hears and wakes :meth:`until`."""

    def __init__(self, also: Callable[[], None] = lambda: None) -> None:
        self.ranges: list[Range] = []
        self._changed = asyncio.Event()
        self._also = also

    def __call__(self, first: int, count: int, error: BaseException | None) -> None:
        self.ranges.append((first, count, error))
        self._also()
        self._changed.set()

    async def until(self, condition: Callable[[], bool]) -> None:
        async with asyncio.timeout(20):
            while not condition():
                self._changed.clear()
                await self._changed.wait()


async def test_a_run_confirms_as_one_range_and_respects_the_pending_bounds(stack: _Stack) -> None:
    config = LedgerClientConfig(max_pending_adds=5, max_pending_add_bytes=100, max_batch_entries=4)
    bk = await stack.bookkeeper(config)
    try:
        handle = await bk.create_ledger(2, 2, 2)
        record = _Recorder()
        ranges = record.ranges
        payloads = [b"p%02d" % i + bytes(20) for i in range(12)]  # 23 bytes each
        assert handle.append_run(payloads, record) == 4  # max_batch_entries
        assert ranges == []  # never answered inside the call
        # One more fits the count bound (5), and 5 * 23 > 100 bytes: none does.
        assert handle.append_run(payloads[4:], record) == 0
        await record.until(lambda: sum(count for _, count, _ in ranges) == 4)
        assert ranges == [(0, 4, None)]  # both bookies answered the run whole
        taken = 4
        while taken < len(payloads):
            got = handle.append_run(payloads[taken:], record)
            taken += got
            if not got:
                done = taken - 1
                await record.until(lambda: handle.last_add_confirmed == done)  # noqa: B023
        await record.until(lambda: handle.last_add_confirmed == 11)
        firsts = [first for first, _, _ in ranges]
        assert firsts == sorted(firsts)
        assert [e for first, count, _ in ranges for e in range(first, first + count)] == list(
            range(12)
        )
        assert all(error is None for _, _, error in ranges)
        await handle.close()
        reader = await bk.open_ledger(handle.ledger_id)
        assert [e.payload for e in await reader.read(0, 11)] == payloads
    finally:
        await bk.close()


async def test_given_checksums_make_the_digests_readers_check(stack: _Stack) -> None:
    """A run given its payloads' checksums (the broker's check of the SENDs') has its digests
    combined from them: the entries read back, each digest checked, as a run without them
    does. A checksum given wrong makes its entry unreadable: the given one is what the digest
    and the bookie's records were made of."""
    bk = await stack.bookkeeper(LedgerClientConfig())
    try:
        payloads = [os.urandom(size) for size in (20_000, 9000, 100, 70_000)]
        crcs = [crc32c.crc32c(p) if len(p) > 1000 else -1 for p in payloads]
        handle = await bk.create_ledger(2, 2, 2)
        record = _Recorder()
        assert handle.append_run(payloads, record, crcs) == 4
        await record.until(lambda: handle.last_add_confirmed == 3)
        wrong = [*crcs[:3], crcs[3] ^ 1]
        assert handle.append_run(payloads, record, wrong) == 4
        await record.until(lambda: handle.last_add_confirmed == 7)
        await handle.close()
        reader = await bk.open_ledger(handle.ledger_id)
        assert [e.payload for e in await reader.read(0, 6)] == payloads + payloads[:3]
        # Each replica answers that entry INTERNAL (its stored record fails the bookie's own
        # check): refused at once, not retried as unreachable until the read timeout.
        with pytest.raises(BookieRejected):
            await reader.read(7, 7)
    finally:
        await bk.close()


async def test_a_bookie_failing_mid_run_confirms_the_head_then_the_rest_elsewhere(
    stack: _Stack,
) -> None:
    """Ensemble (A, B): A journals the run of ten; B journals entries 0..2 and fails the rest
    (answering after A). Entries 0..2 confirm at once, before the ensemble changes; B is
    replaced by the third bookie from entry 3 on, 3..9 are resent to it and confirm."""
    bk = await stack.bookkeeper(LedgerClientConfig(ensemble_change_timeout_s=10))
    try:
        handle = await bk.create_ledger(2, 2, 2)
        a, b = handle.metadata.current_ensemble
        (c,) = set(IDS) - {a, b}
        gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        stack.faces[a].opens = gate
        stack.faces[b].keep = 3
        stack.faces[b].gate = gate
        segments_seen: list[int] = []
        record = _Recorder(lambda: segments_seen.append(len(handle.metadata.ensembles)))
        ranges = record.ranges
        payloads = [b"entry-%d" % i for i in range(10)]
        assert handle.append_run(payloads, record) == 10
        await record.until(lambda: handle.last_add_confirmed == 9)
        assert ranges == [(0, 3, None), (3, 7, None)]
        assert segments_seen == [1, 2]  # the head confirmed before the ensemble change
        assert handle.metadata.ensembles == ((0, (a, b)), (3, (a, c)))
        await handle.close()
        reader = await bk.open_ledger(handle.ledger_id)
        assert [e.payload for e in await reader.read(0, 9)] == payloads
        listed = {x.ledger_id: x.entry_count for x in await stack.bookies[b].list_ledgers()}
        assert listed[handle.ledger_id] == 3  # B holds only what it acknowledged
    finally:
        await bk.close()


async def test_abandon_fails_the_unconfirmed_rest_of_every_run(stack: _Stack) -> None:
    bk = await stack.bookkeeper(LedgerClientConfig())
    try:
        handle = await bk.create_ledger(1, 1, 1)
        record = _Recorder()
        ranges = record.ranges
        assert handle.append_run([b"a", b"b", b"c"], record) == 3
        assert handle.append_run([b"d"], record) == 1
        await handle.abandon()
        # Nothing was durable yet or everything was: each entry is reported exactly once.
        reported = [e for first, count, _ in ranges for e in range(first, first + count)]
        assert reported == [0, 1, 2, 3]
        assert all(isinstance(err, LedgerClosed) for _, _, err in ranges if err is not None)
        with pytest.raises(LedgerClosed):
            handle.append_run([b"e"], record)
    finally:
        await bk.close()


async def test_a_run_of_adds_crossing_the_writers_room_keeps_order(stack: _Stack) -> None:
    """The managed ledger's run of ten adds meets a writer with room for four: the run goes
    in pieces (the rest waits in a task for room), its callback hears every add once, in
    order, and the entries are stored in call order."""
    config = LedgerClientConfig(max_pending_adds=4)
    bk = await stack.bookkeeper(config)
    factory = ManagedLedgerFactory(stack.store, bk)
    try:
        ml = await factory.open("public/default/persistent/runs", ManagedLedgerConfig(1, 1, 1))
        answers: list[tuple[int, list[Position] | None, BaseException | None]] = []
        heard = asyncio.Event()

        def answer(
            index: int, positions: list[Position] | None, error: BaseException | None
        ) -> None:
            answers.append((index, positions, error))
            heard.set()

        datas = [b"m%d" % i for i in range(10)]
        assert ml.reserve_adds(12) == 12
        ml.add_reserved_run(datas, answer, 2)
        assert answers == []
        async with asyncio.timeout(20):
            while sum(len(p or ()) for _, p, _ in answers) < 10:
                heard.clear()
                await heard.wait()
        assert [index for index, _, _ in answers] == sorted(index for index, _, _ in answers)
        positions = [p for _, ps, _ in answers for p in ps or ()]
        assert [index + k for index, ps, _ in answers for k in range(len(ps or ()))] == list(
            range(10)
        )
        assert len(answers) < 10  # stretches, not one call per add
        assert positions == sorted(positions)
        assert ml.reserve_adds(20) == 20  # every slot came back, the 2 unused ones too
        ml.add_reserved_run([], lambda _i, _p, _e: None, 20)
        cursor = await ml.open_cursor("sub", InitialPosition.EARLIEST)
        assert [e.data for e in await cursor.read_entries(20)] == datas
    finally:
        await factory.close()
        await bk.close()


async def test_what_the_adder_knows_of_an_entry_is_cached_with_it(stack: _Stack) -> None:
    """``infos`` handed over with a run (and ``info`` with a single add) come back as each
    cached entry's :attr:`Entry.info`, whether the add went out with its run or waited in a
    task for the writer's room: a reader does not have to work them out again."""
    bk = await stack.bookkeeper(LedgerClientConfig(max_pending_adds=4))
    factory = ManagedLedgerFactory(stack.store, bk)
    try:
        ml = await factory.open("public/default/persistent/infos", ManagedLedgerConfig(1, 1, 1))
        cursor = await ml.open_cursor("sub", InitialPosition.EARLIEST)  # keeps them cached
        confirmed: list[Position] = []
        done = asyncio.Event()

        def answer(
            _index: int, positions: list[Position] | None, error: BaseException | None
        ) -> None:
            assert error is None
            confirmed.extend(positions or ())
            done.set()

        datas = [b"m%d" % i for i in range(10)]
        infos: list[object] = [("facts", i) for i in range(10)]
        assert ml.reserve_adds(10) == 10
        ml.add_reserved_run(datas, answer, 0, infos)
        async with asyncio.timeout(20):
            while len(confirmed) < 10:
                done.clear()
                await done.wait()
        one: asyncio.Future[Position | None] = asyncio.get_running_loop().create_future()
        assert ml.add_entry_callback(b"one", lambda p, _e: one.set_result(p), ("facts", "one"))
        async with asyncio.timeout(20):
            await one
        cached = cursor.read_cached(20)
        assert cached is not None
        assert [(e.data, e.info) for e in cached] == [
            *zip(datas, infos, strict=True),
            (b"one", ("facts", "one")),
        ]
    finally:
        await factory.close()
        await bk.close()


async def test_a_fenced_ledger_fails_the_whole_next_run(stack: _Stack) -> None:
    """Another client recovers (fences) the ledger: the writer's next run is refused FENCED
    by the bookies, reported failed with LedgerFenced for all of its entries, and the
    recovered ledger ends at the last run confirmed before."""
    writer_bk = await stack.bookkeeper(LedgerClientConfig())
    recoverer = await stack.bookkeeper(LedgerClientConfig())
    try:
        handle = await writer_bk.create_ledger(2, 2, 2)
        record = _Recorder()
        assert handle.append_run([b"a", b"b", b"c"], record) == 3
        await record.until(lambda: handle.last_add_confirmed == 2)
        async with asyncio.timeout(20):
            recovered = await recoverer.open_ledger(handle.ledger_id)
        assert recovered.metadata.last_entry_id == 2
        assert handle.append_run([b"d", b"e"], record) == 2
        await record.until(lambda: len(record.ranges) == 2)
        first, count, error = record.ranges[1]
        assert (first, count) == (3, 2)
        assert isinstance(error, LedgerFenced)
        with pytest.raises(LedgerFenced):
            handle.append_run([b"f"], record)
        assert [e.payload for e in await recovered.read(0, 2)] == [b"a", b"b", b"c"]
    finally:
        await recoverer.close()
        await writer_bk.close()
