"""The ledger client against a real etcd and real ``magnetar bookie`` processes.

(a) E=3 Wq=3 Aq=2 keeps accepting writes while an ensemble bookie is SIGKILLed mid-stream
    (a 4th bookie takes its place) and every confirmed entry reads back in order;
(b) a writer process SIGKILLed mid-stream: recovery closes the ledger with every entry the
    writer saw confirmed, and two independently opened readers see identical contents;
(c) a fenced ledger rejects its old writer with LedgerFenced;
(d) missing ledgers / entries and appends to closed ledgers give typed errors.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from magnetar.ids import LedgerId
from magnetar.ledger import (
    BookKeeper,
    LedgerClientConfig,
    LedgerClosed,
    LedgerFenced,
    LedgerState,
    NoSuchEntry,
    NoSuchLedger,
)
from magnetar.ledger.writer_liveness import writer_of
from magnetar.metadata import MetadataStore
from magnetar.metadata.factory import open_store
from tests.kit.bookie import BookieProcess, client_seeing
from tests.kit.etcd import EtcdServer

pytestmark = pytest.mark.etcd

CONFIG = LedgerClientConfig(
    add_timeout_s=3, read_timeout_s=3, ensemble_change_timeout_s=10, bookie_wait_s=15
)
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bookies(
    etcd_server: EtcdServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[list[BookieProcess]]:
    base = tmp_path_factory.mktemp("ledger-bookies")
    procs = [
        BookieProcess(base / f"bookie-{i}", etcd_server.url, session_timeout_s=2) for i in range(4)
    ]
    try:
        for proc in procs:
            proc.start()
        yield procs
    finally:
        for proc in procs:
            proc.stop()


async def _client(store: MetadataStore, bookies: list[BookieProcess]) -> BookKeeper:
    """A client whose registry sees exactly the live test bookies (stale ones expired)."""
    return await client_seeing(store, CONFIG, {b.bookie_id for b in bookies if b.running})


async def test_writes_continue_when_an_ensemble_bookie_is_killed(
    store: MetadataStore, bookies: list[BookieProcess]
) -> None:
    bk = await _client(store, bookies)
    try:
        wh = await bk.create_ledger(3, 3, 2)
        first_ensemble = wh.metadata.current_ensemble
        victim = next(b for b in bookies if b.bookie_id == first_ensemble[0])
        payloads = [f"m-{i}".encode() for i in range(300)]

        async def append(i: int) -> int:
            if i == 100:
                victim.kill()  # SIGKILL mid-stream, with adds in flight
            return await wh.append(payloads[i])

        ids = []
        for start in range(0, 300, 20):  # 20 in flight at a time
            ids += await asyncio.wait_for(
                asyncio.gather(*(append(i) for i in range(start, start + 20))), 30
            )
        assert ids == list(range(300))
        assert wh.last_add_confirmed == 299
        assert len(wh.metadata.ensembles) >= 2
        assert victim.bookie_id not in wh.metadata.current_ensemble
        await wh.close()

        rh = await bk.open_ledger(wh.ledger_id)
        assert rh.metadata.state is LedgerState.CLOSED
        assert rh.metadata.last_entry_id == 299
        assert rh.metadata.length == sum(len(p) for p in payloads)
        entries = await asyncio.wait_for(rh.read(0, 299), 30)
        assert [e.entry_id for e in entries] == list(range(300))
        assert [e.payload for e in entries] == payloads
    finally:
        await bk.close()
        victim.start()  # later tests get four bookies again


def _spawn_writer(url: str, count: int) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.integration.test_ledger_kit", "writer", url, str(count)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=REPO,
        env=env,
    )


def _read_until_confirmed(
    proc: subprocess.Popen[str], want: int, timeout: float
) -> tuple[int, list[int]]:
    assert proc.stdout is not None
    ledger_id = -1
    confirmed: list[int] = []
    deadline = time.monotonic() + timeout
    while len(confirmed) < want:
        assert time.monotonic() < deadline, f"writer confirmed only {len(confirmed)}"
        line = proc.stdout.readline()
        assert line, "writer exited early"
        word, _, value = line.strip().partition(" ")
        if word == "ledger":
            ledger_id = int(value)
        elif word == "confirmed":
            confirmed.append(int(value))
    return ledger_id, confirmed


async def test_recovery_after_writer_sigkill_gives_identical_readers(
    etcd_server: EtcdServer, store: MetadataStore, bookies: list[BookieProcess]
) -> None:
    writer = _spawn_writer(etcd_server.url, 100_000)
    try:
        ledger_id, confirmed = await asyncio.to_thread(_read_until_confirmed, writer, 200, 60)
        writer.kill()  # SIGKILL mid-stream
        writer.wait(timeout=10)
        assert writer.stdout is not None
        for line in writer.stdout.read().splitlines():  # acks printed before the kill landed
            word, _, value = line.partition(" ")
            if word == "confirmed":
                confirmed.append(int(value))
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait(timeout=10)

    assert sorted(confirmed) == list(range(len(confirmed)))  # confirmed in id order, dense
    bk1 = await _client(store, bookies)
    store2 = await open_store(etcd_server.url, session_timeout_s=2)
    bk2 = await BookKeeper.start(store2, CONFIG)
    try:
        rh1 = await asyncio.wait_for(bk1.open_ledger(LedgerId(ledger_id)), 30)
        last = rh1.metadata.last_entry_id
        assert rh1.metadata.state is LedgerState.CLOSED
        assert last >= max(confirmed)
        rh2 = await asyncio.wait_for(bk2.open_ledger(LedgerId(ledger_id)), 30)
        assert rh2.metadata.last_entry_id == last
        one = await asyncio.wait_for(rh1.read(0, last), 30)
        two = await asyncio.wait_for(rh2.read(0, last), 30)
        assert [(e.entry_id, e.payload) for e in one] == [(e.entry_id, e.payload) for e in two]
        assert [e.payload for e in one] == [f"entry-{i}".encode() for i in range(last + 1)]
        assert rh1.metadata.length == sum(len(e.payload) for e in one)
        with pytest.raises(NoSuchEntry):
            await rh2.read(last + 1, last + 1)
    finally:
        await bk1.close()
        await bk2.close()
        await store2.close()


async def test_fenced_ledger_rejects_old_writer(
    etcd_server: EtcdServer, store: MetadataStore, bookies: list[BookieProcess]
) -> None:
    bk = await _client(store, bookies)
    store2 = await open_store(etcd_server.url, session_timeout_s=2)
    recoverer = await BookKeeper.start(store2, CONFIG)
    try:
        wh = await bk.create_ledger(3, 3, 2)
        for i in range(5):
            assert await wh.append(b"before-%d" % i) == i
        rh = await asyncio.wait_for(recoverer.open_ledger(wh.ledger_id), 30)
        assert rh.metadata.state is LedgerState.CLOSED
        assert rh.metadata.last_entry_id == 4
        assert rh.metadata.length == sum(len(b"before-%d" % i) for i in range(5))
        with pytest.raises(LedgerFenced):
            await asyncio.wait_for(wh.append(b"after"), 10)
        with pytest.raises(LedgerFenced):
            await wh.append(b"again")
        await wh.close()  # does not reopen or overwrite the recovered metadata
        again = await recoverer.open_ledger(wh.ledger_id, recovery=False)
        assert again.metadata.last_entry_id == 4
        assert [e.payload for e in await again.read(0, 4)] == [b"before-%d" % i for i in range(5)]
    finally:
        await bk.close()
        await recoverer.close()
        await store2.close()


async def test_typed_errors_for_missing_things_and_closed_ledgers(
    store: MetadataStore, bookies: list[BookieProcess]
) -> None:
    bk = await _client(store, bookies)
    try:
        with pytest.raises(NoSuchLedger):
            await bk.open_ledger(LedgerId(10**15))
        with pytest.raises(NoSuchLedger):
            await bk.delete_ledger(LedgerId(10**15))
        wh = await bk.create_ledger(3, 2, 2, custom={"ml": b"topic"})
        assert await wh.append(b"a") == 0
        assert await wh.append(b"b") == 1
        # An open ledger read without recovery: up to the LAC only.
        peek = await bk.open_ledger(wh.ledger_id, recovery=False)
        assert peek.metadata.state is LedgerState.OPEN
        assert [e.payload for e in await peek.read(0, 0)] == [b"a"]
        with pytest.raises(NoSuchEntry):
            await peek.read(5, 6)
        await wh.close()
        with pytest.raises(LedgerClosed):
            await wh.append(b"c")
        rh = await bk.open_ledger(wh.ledger_id)
        assert rh.metadata.custom["ml"] == b"topic"
        assert writer_of(rh.metadata) is not None  # autorecovery tells live writers by it
        assert [e.payload for e in await rh.read(0, 1)] == [b"a", b"b"]
        with pytest.raises(NoSuchEntry):
            await rh.read(2, 2)
        assert wh.ledger_id in await bk.list_ledgers()
        await bk.delete_ledger(wh.ledger_id)
        assert wh.ledger_id not in await bk.list_ledgers()
        with pytest.raises(NoSuchLedger):
            await bk.open_ledger(wh.ledger_id)
    finally:
        await bk.close()
