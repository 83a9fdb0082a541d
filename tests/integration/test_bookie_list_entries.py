"""``ListEntries``, the audit's listing: the servicer in-process on 127.0.0.1, read through the
ledger client's stub (:class:`magnetar.ledger.bookie_client.BookieClient`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from magnetar.bookie.bookie import Bookie
from magnetar.bookie.config import BookieConfig
from magnetar.bookie.servicer import BookieServicer, start_server
from magnetar.ids import BookieId
from magnetar.ledger.bookie_client import BookieClient
from magnetar.ledger.config import LedgerClientConfig
from magnetar.ledger.errors import BookieUnavailable
from magnetar.wire import bookie_pb2 as pb
from tests.kit.bookie import BookieClient as RawClient
from tests.kit.bookie import entry

MK = b"mk"
PAYLOADS = {1: 23, 2: 5, 3: 17}  # ledger id -> entry count


@pytest.fixture
async def bookie_address(tmp_path: Path) -> AsyncIterator[str]:
    bookie = await Bookie.open(BookieConfig(data_dir=tmp_path))
    server, port = await start_server(BookieServicer(bookie, "bk-list"), "127.0.0.1:0")
    address = f"127.0.0.1:{port}"
    async with RawClient(address) as raw:
        for ledger_id, count in PAYLOADS.items():
            entries = [entry(ledger_id, i, b"p" * (i + ledger_id)) for i in range(count)]
            assert {r.status for r in await raw.add(entries, MK)} == {pb.OK}
    try:
        yield address
    finally:
        await server.stop(1)
        await bookie.close()


def expected(ledger_id: int) -> list[tuple[int, int, int, int]]:
    return [
        (ledger_id, i, i + ledger_id, entry(ledger_id, i, b"p" * (i + ledger_id)).digest)
        for i in range(PAYLOADS[ledger_id])
    ]


async def listed(client: BookieClient, *args: int) -> list[list[tuple[int, int, int, int]]]:
    return [
        [(e.ledger_id, e.entry_id, e.length, e.digest) for e in chunk]
        async for chunk in client.list_entries(*args)
    ]


async def test_every_entry_in_order_in_bounded_chunks(bookie_address: str) -> None:
    client = BookieClient(BookieId("bk-list"), bookie_address, LedgerClientConfig())
    try:
        chunks = await listed(client, 0, 0, 7)
        assert all(0 < len(c) <= 7 for c in chunks)
        assert [e for c in chunks for e in c] == expected(1) + expected(2) + expected(3)
        # a ledger id range (Spark splits one bookie's listing this way); bounds inclusive
        assert [e for c in await listed(client, 2, 3) for e in c] == expected(2) + expected(3)
        assert [e for c in await listed(client, 2, 2) for e in c] == expected(2)
        assert await listed(client, 4, 0) == []
        # the tombstoned ledger's entries are no longer anybody's: left out before GC
        assert await client.delete_ledger(2) == pb.OK
        assert [e for c in await listed(client, 0, 0) for e in c] == expected(1) + expected(3)
    finally:
        await client.close()


async def test_an_inverted_range_is_refused(bookie_address: str) -> None:
    client = BookieClient(BookieId("bk-list"), bookie_address, LedgerClientConfig())
    try:
        with pytest.raises(BookieUnavailable, match=r"INVALID_ARGUMENT.*below first_ledger_id"):
            await listed(client, 3, 2)
        assert (await client.info()).bookie_id == "bk-list"
    finally:
        await client.close()
