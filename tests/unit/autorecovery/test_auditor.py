"""The auditor on a memory metadata store: lost-bookie delay, decommissions, leadership.

Bookie registrations and ledger metadata are written straight into the store (no bookie runs:
the ledgers are OPEN, so the audit asks no bookie for its entries). The auditor runs its real
election and loop; what it decides is read back as under-replication marks.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable

import pytest

from magnetar.autorecovery.auditor import Auditor
from magnetar.autorecovery.marks import UnderReplicationMarks
from magnetar.ids import BookieId, EntryId, LedgerId
from magnetar.ledger import BookKeeper
from magnetar.ledger.metadata import LedgerMetadataView
from magnetar.metadata import MetadataStore, keys
from magnetar.metadata.factory import open_store
from magnetar.wire import ledger_pb2

A, B, C, D = (BookieId(x) for x in "abcd")


@pytest.fixture
async def store() -> AsyncIterator[MetadataStore]:
    opened = await open_store(f"memory://auditor-{uuid.uuid4().hex}")
    for bookie in (A, B, C, D):
        registration = ledger_pb2.BookieRegistration(bookie_id=bookie, address="127.0.0.1:1")
        await opened.create(keys.bookie_available(bookie), registration.SerializeToString())
    meta = LedgerMetadataView(
        ensemble_size=3, write_quorum=2, ack_quorum=2, ensembles=((EntryId(0), (A, B, C)),)
    )
    await opened.create(keys.ledger_meta(LedgerId(1)), meta.encode())
    try:
        yield opened
    finally:
        await opened.close()


async def eventually(check: Callable[[], bool], what: str, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"not within {timeout_s}s: {what}"
        await asyncio.sleep(0.02)


async def running_auditor(store: MetadataStore, delay_s: float) -> tuple[Auditor, BookKeeper]:
    bk = await BookKeeper.start(store)
    auditor = Auditor(
        store, bk, "test", lost_bookie_recovery_delay_s=delay_s, audit_period_s=3600, tick_s=0.02
    )
    return auditor, bk


async def marked(store: MetadataStore) -> dict[int, tuple[str, ...]]:
    return {m.ledger_id: m.missing for m in await UnderReplicationMarks(store).list()}


@pytest.mark.parametrize("delay_s", [0.0, 0.3])
async def test_a_lost_bookie_is_marked_once_the_delay_has_passed(
    store: MetadataStore, delay_s: float
) -> None:
    auditor, bk = await running_auditor(store, delay_s)
    task = asyncio.create_task(auditor.run())
    try:
        await eventually(lambda: auditor.is_leader and auditor.audits == 1, "leading")
        lost_at = time.monotonic()
        await store.delete(keys.bookie_available(A))
        await eventually(lambda: A not in bk.registry.available(), "a unregistered")
        while not await marked(store):
            assert time.monotonic() - lost_at < 5, "never marked"
            await asyncio.sleep(0.02)
        assert time.monotonic() - lost_at >= delay_s
        assert await marked(store) == {1: ("a",)}
    finally:
        task.cancel()
        await asyncio.wait({task})
        await bk.close()


async def test_a_bookie_back_within_the_delay_costs_nothing(store: MetadataStore) -> None:
    auditor, bk = await running_auditor(store, 3600)
    task = asyncio.create_task(auditor.run())
    try:
        await eventually(lambda: auditor.is_leader and auditor.audits == 1, "leading")
        value = await store.get(keys.bookie_available(A))
        assert value is not None
        await store.delete(keys.bookie_available(A))
        await eventually(lambda: A not in bk.registry.available(), "a unregistered")
        await asyncio.sleep(0.3)  # many ticks of the auditor
        await store.create(keys.bookie_available(A), value.value)
        await auditor.audit(full=True)
        assert await marked(store) == {}
    finally:
        task.cancel()
        await asyncio.wait({task})
        await bk.close()


async def test_a_decommission_marks_the_bookies_ledgers_at_once(store: MetadataStore) -> None:
    auditor, bk = await running_auditor(store, 3600)
    task = asyncio.create_task(auditor.run())
    try:
        await eventually(lambda: auditor.is_leader, "leading")
        await store.create(keys.bookie_decommission(B), b"{}")
        deadline = time.monotonic() + 5
        while await marked(store) != {1: ("b",)}:
            assert time.monotonic() < deadline, await marked(store)
            await asyncio.sleep(0.02)
        assert B not in bk.registry.writable()  # placement skips it at once too
    finally:
        task.cancel()
        await asyncio.wait({task})
        await bk.close()
