"""The managed ledger against a real etcd and three real ``magnetar bookie`` processes.

Entries across several ledgers, acks on part of them, close, reopen through a fresh factory
and a fresh metadata session: positions, cursors and acks restored; trimming then deletes the
fully acknowledged ledgers, which are gone from the metadata store.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from magnetar.ledger.client import BookKeeper
from magnetar.managed_ledger import (
    InitialPosition,
    ManagedLedgerConfig,
    ManagedLedgerFactory,
    ManagedLedgerFactoryConfig,
)
from magnetar.metadata import keys
from magnetar.metadata.factory import open_store
from tests.kit.bookie import BookieProcess
from tests.kit.etcd import EtcdServer

pytestmark = pytest.mark.etcd


@pytest.fixture
async def bookies(etcd_server: EtcdServer, tmp_path: Path) -> AsyncIterator[list[BookieProcess]]:
    procs = [
        BookieProcess(tmp_path / f"bookie-{i}", etcd_server.url, journal_sync=False)
        for i in range(3)
    ]
    try:
        await asyncio.gather(*(p.astart() for p in procs))
        yield procs
    finally:
        await asyncio.gather(*(p.astop() for p in procs))


async def test_cursors_and_acks_survive_reopen_and_trimming_deletes_ledgers(
    etcd_server: EtcdServer, bookies: list[BookieProcess]
) -> None:
    name = f"public/default/persistent/ml-{uuid.uuid4().hex[:8]}"
    keep_all = ManagedLedgerConfig(
        ensemble_size=3,
        write_quorum=2,
        ack_quorum=2,
        max_entries_per_ledger=4,
        retention_time_s=-1,  # infinite: nothing is trimmed in the first session
        retention_size_bytes=-1,
    )

    store = await open_store(etcd_server.url, session_timeout_s=3)
    bk = await BookKeeper.start(store)
    factory = ManagedLedgerFactory(store, bk, ManagedLedgerFactoryConfig(cache_max_bytes=1 << 20))
    ml = await factory.open(name, keep_all)
    sub = await ml.open_cursor("sub", InitialPosition.EARLIEST)
    other = await ml.open_cursor("other", InitialPosition.EARLIEST)
    async with asyncio.timeout(60):
        positions = [await ml.add_entry(f"m{i}".encode()) for i in range(18)]
    ledger_ids = sorted({p.ledger_id for p in positions})
    assert len(ledger_ids) == 5  # 4 + 4 + 4 + 4 + 2
    await sub.mark_delete(positions[9])  # ledgers 1-2 wholly acked, ledger 3 in part
    await sub.delete([positions[12], positions[14]])
    await other.mark_delete(positions[11])  # ledgers 1-3 wholly acked
    await factory.close()
    await bk.close()
    await store.close()

    store = await open_store(etcd_server.url, session_timeout_s=3)
    bk = await BookKeeper.start(store)
    factory = ManagedLedgerFactory(store, bk, ManagedLedgerFactoryConfig(cache_max_bytes=0))
    try:
        ml = await factory.open(name, ManagedLedgerConfig(3, 2, 2, max_entries_per_ledger=4))
        assert ml.last_confirmed_position == positions[-1]
        sub, other = ml.cursors["sub"], ml.cursors["other"]
        assert sub.mark_delete_position == positions[9]
        assert sub.backlog == 18 - 10 - 2
        assert other.mark_delete_position == positions[11]
        async with asyncio.timeout(30):
            unread = await sub.read_entries(100)  # from the bookies: no cache
        assert [e.data for e in unread] == [
            f"m{i}".encode() for i in range(10, 18) if i not in (12, 14)
        ]

        async with asyncio.timeout(30):
            trimmed = await ml.trim_ledgers()
        assert trimmed == ledger_ids[:2]  # the slowest cursor ("sub") is inside ledger 3
        for lid in trimmed:
            assert await store.get(keys.ledger_meta(lid)) is None
        assert [li.ledger_id for li in ml.ledgers][:3] == ledger_ids[2:]
        for lid in ledger_ids[2:]:
            assert await store.get(keys.ledger_meta(lid)) is not None

        new = await asyncio.wait_for(ml.add_entry(b"after reopen"), 30)
        assert new > positions[-1]
    finally:
        await factory.close()
        await bk.close()
        await store.close()
