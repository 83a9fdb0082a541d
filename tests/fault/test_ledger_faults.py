"""Fault test: a striped ledger written while bookies are SIGKILLed and restarted at random.

Workload: one writer appends entries (many in flight) to an E=3 Wq=2 Aq=2 ledger on 5 real
bookie processes. Fault injector (seeded; seed printed, override with MAGNETAR_FAULT_SEED):
every few dozen entries SIGKILL a bookie of the current ensemble and restart an earlier victim,
keeping at most two down. Checker: every append returned ids 0..N-1 in call order; after the
writer closes, a second client opens with recovery and reads back exactly the written payloads;
the ledger metadata shows the ensemble changes.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from magnetar.ledger import BookKeeper, LedgerClientConfig, LedgerState
from magnetar.metadata.factory import open_store
from tests.fault.crash import fault_rng
from tests.kit.bookie import BookieProcess
from tests.kit.etcd import EtcdServer

pytestmark = pytest.mark.etcd

ENTRIES = 600
IN_FLIGHT = 32
CONFIG = LedgerClientConfig(
    add_timeout_s=3, read_timeout_s=3, ensemble_change_timeout_s=20, bookie_quarantine_s=5
)


async def test_striped_ledger_survives_random_bookie_kills(
    etcd_server: EtcdServer, tmp_path: Path
) -> None:
    seed, rng = fault_rng()
    bookies = [
        BookieProcess(tmp_path / f"b{i}", etcd_server.url, session_timeout_s=2) for i in range(5)
    ]
    await asyncio.gather(*(b.astart() for b in bookies))
    store = await open_store(etcd_server.url, session_timeout_s=2)
    writer = await BookKeeper.start(store, CONFIG)
    reader = None
    try:
        ids = {b.bookie_id for b in bookies}
        deadline = time.monotonic() + 15
        while not ids <= writer.registry.writable():
            assert time.monotonic() < deadline, "bookies did not register"
            await asyncio.sleep(0.1)
        wh = await writer.create_ledger(3, 2, 2)
        payloads = [f"seed{seed}-entry{i}-".encode() * rng.randint(1, 20) for i in range(ENTRIES)]
        down: list[BookieProcess] = []
        kills = 0
        results: list[int] = []
        for start in range(0, ENTRIES, IN_FLIGHT):
            batch = [wh.append(p) for p in payloads[start : start + IN_FLIGHT]]
            if start and rng.random() < 0.5:
                victims = [
                    b for b in bookies if b.running and b.bookie_id in wh.metadata.current_ensemble
                ]
                if len(down) < 2 and victims:
                    victim = rng.choice(victims)
                    batch.append(victim.akill())  # concurrently with the appends in flight
                    down.append(victim)
                    kills += 1
                elif down:
                    await down.pop(0).astart()
            done = await asyncio.wait_for(asyncio.gather(*batch), 60)
            results += [r for r in done if isinstance(r, int)]
        assert results == list(range(ENTRIES)), f"seed {seed}"
        await wh.close()
        assert kills == 0 or len(wh.metadata.ensembles) > 1

        for b in down:
            await b.astart()
        store2 = await open_store(etcd_server.url, session_timeout_s=2)
        reader = (await BookKeeper.start(store2, CONFIG), store2)
        rh = await asyncio.wait_for(reader[0].open_ledger(wh.ledger_id), 30)
        assert rh.metadata.state is LedgerState.CLOSED
        assert rh.metadata.last_entry_id == ENTRIES - 1
        entries = await asyncio.wait_for(rh.read(0, ENTRIES - 1), 60)
        assert [e.payload for e in entries] == payloads, f"seed {seed}"
    finally:
        await writer.close()
        await store.close()
        if reader is not None:
            await reader[0].close()
            await reader[1].close()
        await asyncio.gather(*(b.astop() for b in bookies))
