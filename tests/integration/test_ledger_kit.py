"""The writer process of the ledger recovery tests (holds no tests).

Run as ``python -m tests.integration.test_ledger_kit writer METADATA_URL COUNT``: creates an
E=3 Wq=3 Aq=2 ledger, prints ``ledger <id>``, appends COUNT entries ``entry-<i>`` (8 in flight)
and prints ``confirmed <entry id>`` for each acknowledged one, flushed at once, so that a test
can SIGKILL it mid-stream knowing exactly which entries it saw confirmed.
"""

from __future__ import annotations

import asyncio
import sys


async def _writer(metadata_url: str, count: int) -> None:
    """Create a ledger, print its id, append ``count`` entries (8 in flight), print each ack."""
    from magnetar.ledger import BookKeeper, LedgerClientConfig
    from magnetar.metadata.factory import open_store

    store = await open_store(metadata_url, session_timeout_s=2)
    bk = await BookKeeper.start(store, LedgerClientConfig(add_timeout_s=3, read_timeout_s=3))
    handle = await bk.create_ledger(3, 3, 2)
    print(f"ledger {handle.ledger_id}", flush=True)
    slots = asyncio.Semaphore(8)

    async def one(i: int) -> None:
        try:
            entry_id = await handle.append(f"entry-{i}".encode())
            print(f"confirmed {entry_id}", flush=True)
        finally:
            slots.release()

    async with asyncio.TaskGroup() as tg:
        for i in range(count):
            await slots.acquire()
            tg.create_task(one(i))
            await asyncio.sleep(0.002)
    print("done", flush=True)
    await asyncio.sleep(3600)  # the test kills us


if __name__ == "__main__":
    if sys.argv[1:2] == ["writer"]:
        asyncio.run(_writer(sys.argv[2], int(sys.argv[3])))
