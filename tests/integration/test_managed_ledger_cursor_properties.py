"""Cursor properties (Pulsar's ``markDelete(position, properties)``): stored with the mark-delete,
replaced as a whole, written even when the position does not move, and loaded on reopen."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from magnetar.managed_ledger import InitialPosition, ManagedLedgerConfig, ManagedLedgerFactory
from tests.kit.stack import Stack, storage_stack

KEEP = ManagedLedgerConfig(
    1, 1, 1, max_entries_per_ledger=4, retention_time_s=-1, retention_size_bytes=-1
)


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[Stack]:
    async with storage_stack(tmp_path, bookies=1) as s:
        yield s


async def test_properties_persist_with_the_mark_delete_and_survive_reopen(stack: Stack) -> None:
    factory = ManagedLedgerFactory(stack.store, stack.bk)
    ml = await factory.open("t", KEEP)
    cursor = await ml.open_cursor("snap", InitialPosition.EARLIEST)
    assert cursor.properties == {}
    pos = [await ml.add_entry(bytes([i])) for i in range(6)]
    await cursor.mark_delete(pos[2], {"p1": 7, "p2": 3})
    await cursor.mark_delete(pos[2], {"p1": 9})  # same position, new properties: still written
    assert cursor.properties == {"p1": 9}
    await cursor.mark_delete(pos[3])  # no properties given: the stored ones stay
    await factory.close()

    factory = ManagedLedgerFactory(stack.store, stack.bk)
    ml = await factory.open("t", KEEP)
    reopened = ml.cursors["snap"]
    assert reopened.properties == {"p1": 9}
    assert reopened.mark_delete_position == pos[3]
    again = await ml.open_cursor("snap")
    assert again.properties == {"p1": 9}
    await factory.close()


async def test_current_ledger_bytes_counts_confirmed_adds(stack: Stack) -> None:
    factory = ManagedLedgerFactory(stack.store, stack.bk)
    ml = await factory.open("sizes", KEEP)
    assert ml.current_ledger_bytes == 0
    for i in range(3):
        await ml.add_entry(b"x" * (10 + i))
    assert ml.current_ledger_bytes == 33
    await factory.close()
