"""The owner's state in the managed ledger's info (properties, terminated position) over the real
in-process stack: every info write carries it, and a refused write leaves it as it was."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from magnetar.managed_ledger import ManagedLedgerConfig, ManagedLedgerFactory
from magnetar.managed_ledger.errors import ManagedLedgerFenced
from tests.kit.stack import Stack, storage_stack

# Four entries a ledger, and no cursor: nine adds roll over twice and leave ledgers to trim.
CFG = ManagedLedgerConfig(ensemble_size=3, write_quorum=2, ack_quorum=2, max_entries_per_ledger=4)


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[Stack]:
    async with storage_stack(tmp_path) as s:
        yield s


async def test_properties_and_end_survive_rollovers_trims_and_reopen(stack: Stack) -> None:
    factory = ManagedLedgerFactory(stack.store, stack.bk)
    ml = await factory.open("t", CFG)
    await ml.set_property("pulsar.topic.epoch", "3")
    for i in range(9):
        await ml.add_entry(bytes([i]))
    await ml.trim_ledgers()  # (or the trim the rollovers started did it already)
    assert len(ml.ledgers) == 1  # the two full ledgers were trimmed: another info write
    end = await ml.terminate()
    assert await ml.terminate() == end  # idempotent
    await factory.close()  # closing the current ledger writes the info once more

    reopened = await ManagedLedgerFactory(stack.store, stack.bk).open("t", CFG)
    assert reopened.properties == {"pulsar.topic.epoch": "3"}
    assert reopened.terminated_position == end
    assert end == (reopened.ledgers[-2].ledger_id, 0)  # the ninth add, last of its ledger
    await reopened.close()


async def test_a_refused_info_write_leaves_the_owner_state_as_it_was(stack: Stack) -> None:
    one = ManagedLedgerFactory(stack.store, stack.bk)
    two = ManagedLedgerFactory(stack.store, stack.bk)
    ml1 = await one.open("t", CFG)
    await ml1.set_property("k", "1")
    await ml1.add_entry(b"a")
    ml2 = await two.open("t", CFG)  # a new owner writes the info: ml1's version is stale
    with pytest.raises(ManagedLedgerFenced):
        await ml1.set_property("k", "2")
    assert ml1.properties == {"k": "1"}
    assert ml2.properties == {"k": "1"}
    with pytest.raises(ManagedLedgerFenced):
        await ml1.terminate()
    assert ml1.terminated_position is None
    await one.close()
    await two.close()
