"""Ledger id allocation over the in-memory metadata store, with a rival client that bumps the
id generator between our read and our compare-and-set: ids are never handed out twice, and an
allocation that loses every round ends in :class:`Timeout`."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator

import pytest

from magnetar.backoff import BackoffPolicy
from magnetar.errors import Timeout
from magnetar.ids import LedgerId
from magnetar.ledger.ledger_manager import LedgerManager
from magnetar.metadata import keys, update
from magnetar.metadata import store as metadata_store
from magnetar.metadata.memory import MemoryMetadataServer, MemoryMetadataStore
from magnetar.metadata.store import Versioned


class RacedStore(MemoryMetadataStore):
    """A memory store whose next ``races`` reads of the id generator are each followed, before
    the caller can write, by a rival's increment (as another BookKeeper client would)."""

    races = 0
    rival: MemoryMetadataStore

    async def get(self, key: str) -> Versioned | None:
        found = await super().get(key)
        if key == keys.LEDGER_ID_GENERATOR and self.races > 0:
            self.races -= 1
            await update(self.rival, key, lambda last: str(int(last or b"0") + 1).encode())
        return found


@pytest.fixture
async def store() -> AsyncIterator[RacedStore]:
    name = f"ledger-manager-{uuid.uuid4().hex}"
    ours = await RacedStore.open(name)
    assert isinstance(ours, RacedStore)
    ours.rival = await MemoryMetadataStore.open(name)
    yield ours
    await ours.rival.close()
    await ours.close()
    MemoryMetadataServer.forget(name)


async def test_ids_start_at_one_and_skip_the_ones_a_rival_took(store: RacedStore) -> None:
    manager = LedgerManager(store)
    assert await manager.allocate_ledger_id() == LedgerId(1)
    store.races = 3  # the rival takes 2, 3 and 4 while we retry
    assert await manager.allocate_ledger_id() == LedgerId(5)
    assert await manager.allocate_ledger_id() == LedgerId(6)


async def test_losing_every_round_ends_after_the_attempt_cap(
    store: RacedStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pauses of a millisecond, so that the 100 attempts end long before the deadline.
    monkeypatch.setattr(metadata_store, "METADATA_CAS", BackoffPolicy(initial=0.001, cap=0.001))
    manager = LedgerManager(store)
    store.races = 1_000
    with pytest.raises(Timeout, match="after 100 attempts"):
        await manager.allocate_ledger_id()
    assert store.races == 1_000 - 100


async def test_the_deadline_covers_the_whole_allocation_with_its_retries(
    store: RacedStore,
) -> None:
    manager = LedgerManager(store, timeout_s=0.3)
    store.races = 1_000
    started = time.monotonic()
    with pytest.raises(Timeout, match=r"did not answer in 0\.3s"):
        await manager.allocate_ledger_id()
    assert time.monotonic() - started < 1.0
    assert store.races < 1_000 - 1  # it did retry before the deadline
