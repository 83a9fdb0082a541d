"""Ledgers as a stopped standalone left them in its metadata (RocksDB under its data dir)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from magnetar.ledger.ledger_manager import LedgerManager
from magnetar.metadata.factory import open_store


def tagged_ledgers(data_dir: Path, key: str, value: str) -> list[int]:
    """The ids of the ledgers whose custom metadata has ``key`` = ``value`` (e.g. the
    compacted ledgers of one managed ledger: ``compacted-topic`` = its name). The standalone
    must be stopped: RocksDB allows one process at a time."""

    url = f"rocksdb://{data_dir.absolute() / 'metadata'}"

    async def scan() -> list[int]:
        store = await open_store(url)
        try:
            manager = LedgerManager(store)
            found = []
            for lid in await manager.list_ledgers():
                meta = await manager.read(lid)
                if meta.metadata.custom.get(key) == value.encode():
                    found.append(int(lid))
            return found
        finally:
            await store.close()

    return asyncio.run(scan())
