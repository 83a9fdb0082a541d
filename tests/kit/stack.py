"""The real storage stack in-process, for managed-ledger and ledger-client tests (holds no tests).

::

    async with storage_stack(tmp_path, bookies=3) as stack:
        factory = ManagedLedgerFactory(stack.store, stack.bk, ManagedLedgerFactoryConfig(1 << 20))
        ml = await factory.open("t/ns/topic", config)
        other = await stack.new_client()    # a second BookKeeper client (e.g. a new owner)

A metadata store (memory:// by default, or any URL), ``n`` real bookies (``magnetar.bookie``
``Bookie``, registered like the bookie process does), and the real ``magnetar.ledger.BookKeeper``
client. ``transport`` says how the client reaches the bookies: ``"grpc"`` (each bookie serves
its gRPC servicer on 127.0.0.1, as a bookie process does) or ``"in-process"`` (the client calls
each bookie through ``magnetar.bookie.local.LocalBookie``, as the standalone does; the
registered address leads nowhere, so nothing can go over gRPC). Journals skip fsync: these
tests check the layers above the disk, not disk durability. Clients from :meth:`new_client`
are closed with the stack.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import grpc

from magnetar.bookie.bookie import Bookie
from magnetar.bookie.config import BookieConfig
from magnetar.bookie.journal import JournalConfig
from magnetar.bookie.local import LocalBookie
from magnetar.bookie.registration import Registration
from magnetar.bookie.servicer import BookieServicer, start_server
from magnetar.ids import BookieId
from magnetar.ledger.client import BookKeeper
from magnetar.ledger.config import LedgerClientConfig
from magnetar.ledger.local_bookie import InProcessBookie
from magnetar.metadata.factory import open_store
from magnetar.metadata.store import MetadataStore

Transport = Literal["grpc", "in-process"]
TRANSPORTS: tuple[Transport, ...] = ("grpc", "in-process")
_NOWHERE = "127.0.0.1:9"  # the discard port: an in-process bookie is never dialled


@dataclass
class Stack:
    store: MetadataStore
    bk: BookKeeper
    bookies: list[tuple[Bookie, grpc.aio.Server | None, Registration]] = field(default_factory=list)
    local_bookies: dict[BookieId, InProcessBookie] = field(default_factory=dict)
    config: LedgerClientConfig = field(default_factory=LedgerClientConfig)
    clients: list[BookKeeper] = field(default_factory=list)

    async def new_client(self) -> BookKeeper:
        """Another BookKeeper client on the same store and bookies, closed with the stack."""
        bk = await BookKeeper.start(self.store, self.config, local_bookies=self.local_bookies)
        self.clients.append(bk)
        return bk


@contextlib.asynccontextmanager
async def storage_stack(
    data_dir: Path,
    bookies: int = 3,
    metadata_url: str | None = None,
    transport: Transport = "grpc",
) -> AsyncIterator[Stack]:
    url = metadata_url or f"memory://ml-{uuid.uuid4().hex[:10]}"
    store = await open_store(url)
    config = LedgerClientConfig(bookie_wait_s=10.0)
    started: list[tuple[Bookie, grpc.aio.Server | None, Registration]] = []
    local: dict[BookieId, InProcessBookie] = {}
    stack: Stack | None = None
    try:
        for i in range(bookies):
            bookie = await Bookie.open(
                BookieConfig(data_dir=data_dir / f"bookie-{i}", journal=JournalConfig(sync=False))
            )
            bookie_id = BookieId(f"ml-test-{uuid.uuid4().hex[:8]}")
            server: grpc.aio.Server | None = None
            if transport == "grpc":
                server, port = await start_server(BookieServicer(bookie, bookie_id), "127.0.0.1:0")
                address = f"127.0.0.1:{port}"
            else:
                local[bookie_id] = LocalBookie(bookie)
                address = _NOWHERE
            registration = Registration(store, bookie_id, address)
            started.append((bookie, server, registration))
            await registration.register()
        stack = Stack(store, await BookKeeper.start(store, config, local), started, local, config)
        yield stack
    finally:
        if stack is not None:
            for bk in [stack.bk, *stack.clients]:
                await bk.close()
        for bookie, grpc_server, registration in started:
            await registration.unregister()
            if grpc_server is not None:
                await grpc_server.stop(0.5)
            await bookie.close()
        await store.close()
