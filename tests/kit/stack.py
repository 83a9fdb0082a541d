"""The real storage stack in-process, for managed-ledger tests (holds no tests).

::

    async with storage_stack(tmp_path, bookies=3) as stack:
        factory = ManagedLedgerFactory(stack.store, stack.bk, ManagedLedgerFactoryConfig(1 << 20))
        ml = await factory.open("t/ns/topic", config)

A metadata store (memory:// by default, or any URL), ``n`` real bookies (``magnetar.bookie``
``Bookie`` + its gRPC servicer on 127.0.0.1, registered like the bookie process does), and the
real ``magnetar.ledger.BookKeeper`` client. Journals skip fsync: these tests check the managed
ledger's logic, not disk durability.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from magnetar.bookie.bookie import Bookie, BookieConfig
from magnetar.bookie.journal import JournalConfig
from magnetar.bookie.registration import Registration
from magnetar.bookie.servicer import BookieServicer, start_server
from magnetar.ids import BookieId
from magnetar.ledger.client import BookKeeper
from magnetar.ledger.config import LedgerClientConfig
from magnetar.metadata.factory import open_store
from magnetar.metadata.store import MetadataStore


@dataclass
class Stack:
    store: MetadataStore
    bk: BookKeeper
    bookies: list[tuple[Bookie, grpc.aio.Server, Registration]] = field(default_factory=list)


@contextlib.asynccontextmanager
async def storage_stack(
    data_dir: Path, bookies: int = 3, metadata_url: str | None = None
) -> AsyncIterator[Stack]:
    url = metadata_url or f"memory://ml-{uuid.uuid4().hex[:10]}"
    store = await open_store(url)
    started: list[tuple[Bookie, grpc.aio.Server, Registration]] = []
    bk: BookKeeper | None = None
    try:
        for i in range(bookies):
            bookie = await Bookie.open(
                BookieConfig(data_dir=data_dir / f"bookie-{i}", journal=JournalConfig(sync=False))
            )
            bookie_id = BookieId(f"ml-test-{uuid.uuid4().hex[:8]}")
            server, port = await start_server(BookieServicer(bookie, bookie_id), "127.0.0.1:0")
            registration = Registration(store, bookie_id, f"127.0.0.1:{port}")
            started.append((bookie, server, registration))
            await registration.register()
        bk = await BookKeeper.start(store, LedgerClientConfig(bookie_wait_s=10.0))
        yield Stack(store, bk, started)
    finally:
        if bk is not None:
            await bk.close()
        for bookie, server, registration in started:
            await registration.unregister()
            await server.stop(0.5)
            await bookie.close()
        await store.close()
