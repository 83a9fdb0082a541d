"""Managed ledger over the real in-process stack (bookies on 127.0.0.1): the main paths."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from magnetar.ledger.errors import NoSuchLedger
from magnetar.managed_ledger import (
    InitialPosition,
    ManagedLedgerConfig,
    ManagedLedgerFactory,
    ManagedLedgerFactoryConfig,
)
from magnetar.metadata import keys
from tests.kit.stack import storage_stack


async def test_add_read_ack_rollover_reopen_trim(tmp_path: Path) -> None:
    cfg = ManagedLedgerConfig(
        ensemble_size=3, write_quorum=2, ack_quorum=2, max_entries_per_ledger=5
    )
    async with storage_stack(tmp_path) as stack:
        factory = ManagedLedgerFactory(stack.store, stack.bk, ManagedLedgerFactoryConfig(1 << 20))
        ml = await factory.open("t/ns/topic", cfg)
        cursor = await ml.open_cursor("sub", InitialPosition.EARLIEST)
        positions = await asyncio.wait_for(
            asyncio.gather(*(ml.add_entry(f"m{i}".encode()) for i in range(23))), 30
        )
        assert positions == sorted(positions)
        assert len({p.ledger_id for p in positions}) == 5
        batch = await cursor.read_entries(100)
        assert [e.data for e in batch] == [f"m{i}".encode() for i in range(23)]
        assert cursor.backlog == 23
        await cursor.mark_delete(positions[11])
        await cursor.delete([positions[15], positions[13]])
        assert cursor.backlog == 23 - 12 - 2
        await factory.close()

        factory = ManagedLedgerFactory(stack.store, stack.bk, ManagedLedgerFactoryConfig(0))
        ml = await factory.open("t/ns/topic", cfg)
        cursor = ml.cursors["sub"]
        assert cursor.mark_delete_position == positions[11]
        assert cursor.backlog == 9
        again = await cursor.read_entries(100)  # no cache: from the bookies
        assert [e.position for e in again] == [
            p for i, p in enumerate(positions) if i > 11 and i not in (13, 15)
        ]
        # The acks above made ledgers 1 and 2 wholly consumed: trimmed in the background.
        first, second = positions[0].ledger_id, positions[5].ledger_id
        assert await ml.trim_ledgers() == []
        assert [li.ledger_id for li in ml.ledgers][:3] == [p.ledger_id for p in positions[10::5]]
        for gone in (first, second):
            with pytest.raises(NoSuchLedger):
                await stack.bk.open_ledger(gone, recovery=False)
        assert await stack.store.get(keys.managed_ledger_info("t/ns/topic")) is not None
        nxt = await ml.add_entry(b"after")
        assert nxt > positions[-1]
        await factory.close()
