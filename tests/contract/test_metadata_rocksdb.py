"""RocksDB-only guarantees: acknowledged writes survive a reopen and a kill -9, and no
ephemeral key survives its process (a restarted standalone process has no live session)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from magnetar.metadata import open_store

# Writes, prints "ready" once every write is acknowledged, then waits to be killed.
_WRITER = """
import asyncio, sys
from magnetar.metadata import open_store

async def main(url):
    store = await open_store(url)
    for i in range(50):
        await store.put(f"/durable/{i:03d}", str(i).encode())
    await store.create("/ephemeral/me", b"alive", ephemeral=True)
    print("ready", flush=True)
    await asyncio.sleep(3600)

asyncio.run(main(sys.argv[1]))
"""


async def test_data_survives_reopen_and_ephemeral_keys_do_not(tmp_path: Path) -> None:
    url = f"rocksdb://{tmp_path / 'meta'}"
    store = await open_store(url)
    await store.create("/a", b"1")
    await store.put("/a", b"2", expected_version=0)
    await store.create("/eph", b"x", ephemeral=True)
    await store.close()

    store = await open_store(url)
    try:
        got = await store.get("/a")
        assert got is not None
        assert (got.value, got.version) == (b"2", 1)
        assert await store.get("/eph") is None
    finally:
        await store.close()


async def test_kill_9_loses_no_acknowledged_write_and_purges_ephemeral(tmp_path: Path) -> None:
    url = f"rocksdb://{tmp_path / 'meta'}"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _WRITER, url, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        assert proc.stdout is not None
        async with asyncio.timeout(30):
            while (line := await proc.stdout.readline()).strip() != b"ready":
                assert line, "writer exited before it was ready"
    finally:
        proc.kill()
        await proc.wait()

    store = await open_store(url)
    try:
        listed = await store.list("/durable/")
        assert [v.value for _, v in listed] == [str(i).encode() for i in range(50)]
        assert await store.list_keys("/ephemeral/") == []
    finally:
        await store.close()


async def test_two_stores_on_one_path_share_the_database(tmp_path: Path) -> None:
    url = f"rocksdb://{tmp_path / 'meta'}"
    a, b = await open_store(url), await open_store(url)
    try:
        await a.create("/shared", b"from a")
        got = await b.get("/shared")
        assert got is not None
        assert got.value == b"from a"
        await a.close()
        assert await b.get("/shared") is not None  # b keeps the database open
    finally:
        await a.close()
        await b.close()


async def test_concurrent_opens_of_one_path_share_one_database(tmp_path: Path) -> None:
    url = f"rocksdb://{tmp_path / 'meta'}"
    stores = await asyncio.gather(*(open_store(url) for _ in range(4)))
    try:
        await stores[0].put("/k", b"v")
        for store in stores:
            got = await store.get("/k")
            assert got is not None
            assert got.value == b"v"
    finally:
        for store in stores:
            await store.close()
