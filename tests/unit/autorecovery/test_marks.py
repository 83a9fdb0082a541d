"""Under-replication marks on a real (memory) metadata store: merge, list, remove by version."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from magnetar.autorecovery.marks import UnderReplicationMarks, decode_mark, encode_mark
from magnetar.ids import BookieId, LedgerId
from magnetar.metadata import MetadataStore, keys
from magnetar.metadata.factory import open_store


@pytest.fixture
async def store() -> AsyncIterator[MetadataStore]:
    opened = await open_store(f"memory://marks-{uuid.uuid4().hex}")  # one keyspace per test
    try:
        yield opened
    finally:
        await opened.close()


async def test_marks_merge_and_report_whether_they_changed(store: MetadataStore) -> None:
    marks = UnderReplicationMarks(store)
    assert await marks.mark(LedgerId(3), [BookieId("a")])
    assert not await marks.mark(LedgerId(3), [BookieId("a")])  # nothing new
    assert await marks.mark(LedgerId(3), [BookieId("b")])
    (mark,) = await marks.list()
    assert mark.ledger_id == 3
    assert mark.missing == ("a", "b")
    assert await store.list_keys(keys.UNDER_REPLICATED_PREFIX) == [keys.under_replicated(3)]


async def test_remove_keeps_a_mark_widened_since_it_was_read(store: MetadataStore) -> None:
    marks = UnderReplicationMarks(store)
    await marks.mark(LedgerId(1), [BookieId("a")])
    read = await marks.get(LedgerId(1))
    assert read is not None
    await marks.mark(LedgerId(1), [BookieId("b")])
    assert not await marks.remove(read)
    again = await marks.get(LedgerId(1))
    assert again is not None
    assert await marks.remove(again)
    assert await marks.count() == 0


def test_an_unreadable_mark_names_no_bookie() -> None:
    assert decode_mark(LedgerId(1), b"not json").missing == ()
    assert decode_mark(LedgerId(1), encode_mark([BookieId("x")], 5)).missing == ("x",)


async def test_marking_again_keeps_the_version_a_worker_removes_at(store: MetadataStore) -> None:
    marks = UnderReplicationMarks(store)
    await marks.mark(LedgerId(2), [BookieId("a"), BookieId("b")])
    read = await marks.get(LedgerId(2))
    assert read is not None
    assert not await marks.mark(LedgerId(2), [BookieId("b")])  # the auditor's rescan
    assert await marks.remove(read)
