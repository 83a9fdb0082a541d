"""``magnetar cluster status``'s one read of the metadata store: the bundle owners and the
under-replicated ledgers come from a single session (a real in-memory store here)."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator

import pytest

from magnetar.ids import BookieId, EntryId, LedgerId
from magnetar.ledger.metadata import LedgerMetadataView
from magnetar.ledger.replication import UnderReplicatedLedger
from magnetar.localcluster.cluster_metadata import read_cluster_metadata
from magnetar.localcluster.owners import BundleOwner
from magnetar.metadata import keys
from magnetar.metadata.factory import open_store
from magnetar.metadata.memory import MemoryMetadataServer

A, B, C, D = (BookieId(f"bookie-{x}") for x in "abcd")


@pytest.fixture
def url() -> Iterator[str]:
    name = f"cluster-status-{uuid.uuid4().hex}"
    yield f"memory://{name}"
    MemoryMetadataServer.forget(name)


def _ledger(*bookies: BookieId) -> bytes:
    return LedgerMetadataView(2, 2, 2, ensembles=((EntryId(0), bookies),)).encode()


async def _fill(url: str) -> None:
    store = await open_store(url)
    try:
        owner = json.dumps({"nativeUrl": "pulsar://127.0.0.1:6650"}).encode()
        await store.create(keys.bundle_owner("public", "default", "0x00000000_0xffffffff"), owner)
        for bookie in (A, B, C):
            await store.create(keys.bookie_available(bookie), b"{}")
        await store.create(keys.ledger_meta(LedgerId(1)), _ledger(A, B))  # fully replicated
        await store.create(keys.ledger_meta(LedgerId(2)), _ledger(A, D))  # D is gone
        await store.create(keys.ledger_meta(LedgerId(3)), b"not ledger metadata")  # left out
    finally:
        await store.close()


def test_one_read_gives_the_owners_and_the_under_replicated_ledgers(url: str) -> None:
    asyncio.run(_fill(url))
    read = read_cluster_metadata(url)
    assert read is not None
    assert read.owners == [
        BundleOwner("public/default", "0x00000000_0xffffffff", "pulsar://127.0.0.1:6650")
    ]
    assert read.under_replicated == [UnderReplicatedLedger(LedgerId(2), (D,))]


def test_an_empty_store_has_no_owners_and_nothing_under_replicated(url: str) -> None:
    read = read_cluster_metadata(url)
    assert read is not None
    assert read.owners == []
    assert read.under_replicated == []
