"""Autorecovery restores lost copies: kill -9 a bookie, wipe its disk, watch ledgers heal.

Real etcd (one per test: the auditor audits every ledger of its store), real bookie and
autorecovery processes, ledgers written with the real ledger client. The check reads every
entry back directly from each bookie the repaired metadata names for it (its whole write set),
so a copy that only exists in the metadata fails the test.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import time
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from magnetar.ids import BookieId, EntryId, LedgerId
from magnetar.ledger import BookKeeper, LedgerClientConfig, LedgerState
from magnetar.ledger.distribution import write_set
from magnetar.ledger.metadata import LedgerMetadataView
from magnetar.metadata import MetadataStore, keys
from magnetar.metadata.factory import open_store
from magnetar.wire import bookie_pb2 as pb
from tests.kit.autorecovery import AutorecoveryProcess, assert_no_overlapping_locks
from tests.kit.bookie import BookieClient, BookieProcess, entry
from tests.kit.etcd import EtcdServer
from tests.kit.scrape import scrape, value

pytestmark = pytest.mark.etcd

CONFIG = LedgerClientConfig(add_timeout_s=3, read_timeout_s=3, bookie_quarantine_s=3)
ENTRIES = 60  # per ledger
STATE = "/api/v1/autorecovery/state"


@dataclass
class Setup:
    etcd: EtcdServer
    bookies: list[BookieProcess]
    store: MetadataStore
    bk: BookKeeper


@pytest.fixture
async def setup(tmp_path: Path) -> AsyncIterator[Setup]:
    etcd = EtcdServer(data_dir=tmp_path / "etcd")
    await asyncio.to_thread(etcd.start)
    bookies = [
        BookieProcess(tmp_path / f"b{i}", etcd.url, session_timeout_s=2, journal_sync=False)
        for i in range(3)
    ]
    await asyncio.gather(*(b.astart() for b in bookies))
    store = await open_store(etcd.url, session_timeout_s=2)
    bk = await BookKeeper.start(store, CONFIG)
    try:
        yield Setup(etcd, bookies, store, bk)
    finally:
        await bk.close()
        await store.close()
        await asyncio.gather(*(b.astop() for b in bookies))
        await asyncio.to_thread(etcd.stop)


async def wait_until(what: str, check: object, timeout_s: float = 60.0) -> None:
    """Await ``check()`` (a coroutine function returning bool) until true; fail naming ``what``."""
    deadline = time.monotonic() + timeout_s
    while not await check():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"not within {timeout_s:g}s: {what}"
        await asyncio.sleep(0.2)


async def write_ledgers(
    bk: BookKeeper, count: int, e: int, wq: int, aq: int
) -> dict[LedgerId, list[bytes]]:
    written = {}
    for n in range(count):
        handle = await bk.create_ledger(e, wq, aq)
        payloads = [f"ledger{n}-entry{i}-".encode() * (1 + i % 7) for i in range(ENTRIES)]
        await asyncio.gather(*(handle.append(p) for p in payloads))
        await handle.close()
        written[handle.ledger_id] = payloads
    return written


async def read_back_from_every_replica(
    setup: Setup, ledger_id: LedgerId, payloads: list[bytes]
) -> LedgerMetadataView:
    """Read each entry from every bookie of its write set in the current metadata."""
    meta = (await setup.bk.manager.read(ledger_id)).metadata
    assert meta.state is LedgerState.CLOSED
    assert meta.last_entry_id == len(payloads) - 1
    clients: dict[str, BookieClient] = {}
    try:
        for entry_id, payload in enumerate(payloads):
            ensemble = meta.ensemble_for(entry_id)
            for position in write_set(entry_id, len(ensemble), meta.write_quorum):
                bookie = ensemble[position]
                address = setup.bk.registry.address(bookie)
                assert address is not None, bookie
                client = clients.setdefault(bookie, BookieClient(address))
                response = await client.read_entry(ledger_id, entry_id)
                assert response.status == pb.OK, (ledger_id, entry_id, bookie, response.status)
                assert response.entry.payload == payload, (ledger_id, entry_id, bookie)
    finally:
        for client in clients.values():
            await client.close()
    return meta


def get_json(url: str) -> dict[str, object]:
    with urllib.request.urlopen(url, timeout=5) as response:
        body: dict[str, object] = json.loads(response.read())
    return body


async def no_marks(store: MetadataStore) -> bool:
    return not await store.list_keys(keys.UNDER_REPLICATED_PREFIX)


async def test_e3_wq2_ledgers_regain_their_write_quorum_on_a_new_bookie(
    setup: Setup, tmp_path: Path
) -> None:
    written = await write_ledgers(setup.bk, 4, 3, 2, 2)
    # One more ledger left OPEN by a writer that dies: autorecovery must fence and close it.
    dead_store = await open_store(setup.etcd.url, session_timeout_s=2)
    dead_writer = await BookKeeper.start(dead_store, CONFIG)
    open_handle = await dead_writer.create_ledger(3, 2, 2)
    open_payloads = [f"open-{i}".encode() for i in range(ENTRIES)]
    await asyncio.gather(*(open_handle.append(p) for p in open_payloads))
    await dead_store.close()  # the writer's session ends: its ledger stays OPEN, writer gone
    written[open_handle.ledger_id] = open_payloads

    victim = setup.bookies[0]
    await victim.akill()
    shutil.rmtree(victim.data_dir)  # its copies are gone for good
    replacement = BookieProcess(tmp_path / "b-new", setup.etcd.url, session_timeout_s=2)
    setup.bookies.append(replacement)
    await replacement.astart()

    with_ar = AutorecoveryProcess(tmp_path / "ar", setup.etcd.url)
    await with_ar.astart()
    try:

        async def repaired() -> bool:
            for ledger_id in written:
                meta = (await setup.bk.manager.read(ledger_id)).metadata
                if victim.bookie_id in meta.all_bookies() or not meta.is_closed:
                    return False
            return await no_marks(setup.store)

        await wait_until("every ledger off the killed bookie and unmarked", repaired, 90)
        for ledger_id, payloads in written.items():
            meta = await read_back_from_every_replica(setup, ledger_id, payloads)
            assert replacement.bookie_id in meta.all_bookies()
        state = await asyncio.to_thread(get_json, with_ar.http_url + STATE)
        assert state["isAuditor"] is True, state
        assert state["auditor"] == with_ar.autorecovery_id, state
        metrics = scrape(with_ar.http_url)
        assert value(metrics, "autorecovery_rereplicated_bytes_total") > 0
        assert value(metrics, "autorecovery_under_replicated_ledgers") == 0
        assert value(metrics, "autorecovery_fragments_in_progress") == 0
    finally:
        await with_ar.astop()


async def test_e2_wq2_ledgers_move_to_the_third_bookie(setup: Setup, tmp_path: Path) -> None:
    written = await write_ledgers(setup.bk, 6, 2, 2, 2)
    ensembles = {lid: (await setup.bk.manager.read(lid)).metadata.all_bookies() for lid in written}
    # The victim is the bookie most ledgers name (placement is random, and under load a bookie
    # may register after the first ledgers were placed): its ledgers have a third bookie to go to.
    victim = max(setup.bookies, key=lambda b: sum(b.bookie_id in e for e in ensembles.values()))
    named = [lid for lid, ensemble in ensembles.items() if victim.bookie_id in ensemble]
    assert named, "placement put no ledger on any bookie; the test proves nothing"
    await victim.akill()
    shutil.rmtree(victim.data_dir)

    # Two processes side by side: they must never copy the same ledger at once.
    pair = [AutorecoveryProcess(tmp_path / f"ar{i}", setup.etcd.url) for i in range(2)]
    await asyncio.gather(*(p.astart() for p in pair))
    try:

        async def repaired() -> bool:
            for ledger_id in written:
                meta = (await setup.bk.manager.read(ledger_id)).metadata
                if victim.bookie_id in meta.all_bookies():
                    return False
            return await no_marks(setup.store)

        await wait_until("every ledger off the killed bookie and unmarked", repaired, 90)
        for ledger_id, payloads in written.items():
            await read_back_from_every_replica(setup, ledger_id, payloads)
    finally:
        await asyncio.gather(*(p.astop() for p in pair))
    assert assert_no_overlapping_locks(pair) >= len(named)


async def test_the_periodic_check_refills_a_live_bookie_that_lacks_entries(
    setup: Setup, tmp_path: Path
) -> None:
    """A closed E2 Wq2 ledger whose second bookie never got its entries (as after a lost
    journal): only the full check can see it, since every bookie is registered."""
    full, empty, spare = setup.bookies
    master_key = b"mk"
    ledger_id = await setup.bk.manager.allocate_ledger_id()
    payloads = [b"entry-%d" % i for i in range(ENTRIES)]
    async with BookieClient(full.address) as client:
        results = await client.add(
            [entry(ledger_id, i, p) for i, p in enumerate(payloads)], master_key
        )
    assert {r.status for r in results} == {pb.OK}
    meta = LedgerMetadataView(
        ensemble_size=2,
        write_quorum=2,
        ack_quorum=2,
        ensembles=((EntryId(0), (BookieId(full.bookie_id), BookieId(empty.bookie_id))),),
        state=LedgerState.CLOSED,
        last_entry_id=EntryId(ENTRIES - 1),
        length=sum(map(len, payloads)),
        master_key=master_key,
    )
    await setup.bk.manager.create(ledger_id, meta)

    with_ar = AutorecoveryProcess(tmp_path / "ar", setup.etcd.url)  # audits fully when elected
    await with_ar.astart()
    try:

        async def refilled() -> bool:
            meta = (await setup.bk.manager.read(ledger_id)).metadata
            return empty.bookie_id not in meta.all_bookies() and await no_marks(setup.store)

        await wait_until("the ledger off the bookie that lacked its entries", refilled, 60)
        repaired = await read_back_from_every_replica(setup, ledger_id, payloads)
        assert set(repaired.all_bookies()) == {full.bookie_id, spare.bookie_id}
    finally:
        await with_ar.astop()


async def test_ledgers_spread_over_the_racks_bookies_register(tmp_path: Path) -> None:
    """Four bookies in two racks: every E2 ensemble takes one of each (random placement would
    put both copies in one rack a third of the time)."""
    etcd = EtcdServer(data_dir=tmp_path / "etcd")
    await asyncio.to_thread(etcd.start)
    racks = ["r1", "r1", "r2", "r2"]
    bookies = [
        BookieProcess(tmp_path / f"b{i}", etcd.url, journal_sync=False, extra_args=["--rack", rack])
        for i, rack in enumerate(racks)
    ]
    try:
        await asyncio.gather(*(b.astart() for b in bookies))
        store = await open_store(etcd.url)
        bk = await BookKeeper.start(store, CONFIG)
        try:
            rack_of = {b.bookie_id: rack for b, rack in zip(bookies, racks, strict=True)}
            assert bk.registry.racks() == rack_of
            for _ in range(20):
                handle = await bk.create_ledger(2, 2, 2)
                assert {rack_of[b] for b in handle.metadata.current_ensemble} == {"r1", "r2"}
                await handle.close()
        finally:
            await bk.close()
            await store.close()
    finally:
        await asyncio.gather(*(b.astop() for b in bookies))
        await asyncio.to_thread(etcd.stop)
