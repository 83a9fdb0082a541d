"""Real ``magnetar bookie`` processes against a real etcd: durability across kill -9, cookies,
registration."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from magnetar.metadata import keys
from magnetar.metadata.factory import open_store
from magnetar.wire import bookie_pb2 as pb
from magnetar.wire import ledger_pb2
from tests.kit.bookie import BookieClient, BookieProcess, entry
from tests.kit.etcd import EtcdServer

pytestmark = pytest.mark.etcd

MK = b"master-key"


async def test_acknowledged_adds_survive_sigkill(tmp_path: Path, etcd_server: EtcdServer) -> None:
    bookie = BookieProcess(data_dir=tmp_path / "b", metadata_url=etcd_server.url)
    await bookie.astart()
    try:
        payloads = {i: bytes([i % 251]) * (1 + (i * 37) % 3000) for i in range(300)}
        batches = [
            [entry(7, i, payloads[i]) for i in range(start, start + 30)]
            for start in range(0, 300, 30)
        ]
        async with BookieClient(bookie.address) as client:
            results = await client.add_batches(batches, MK)
        acked = [r for batch in results.values() for r in batch if r.status == pb.OK]
        assert len(acked) == 300
        # Crash right after the acknowledgements: no shutdown, no checkpoint.
        await bookie.akill()
        await bookie.astart()
        async with BookieClient(bookie.address) as client:
            got = await client.read_range(7, 0, 299)
            assert [r.entry_id for r in got] == list(range(300))
            for r in got:
                assert r.status == pb.OK
                assert r.entry.payload == payloads[r.entry_id]
                assert r.entry.digest == entry(7, r.entry_id, payloads[r.entry_id]).digest
            last = await client.read_entry(7, -1)
            assert (last.status, last.entry.entry_id) == (pb.OK, 299)
            # The master key survived too: a wrong key is still refused after the restart.
            wrong = await client.add([entry(7, 300, b"x")], b"other-key")
            assert wrong[0].status == pb.UNAUTHORIZED
    finally:
        await bookie.astop()


async def test_adds_written_over_the_zero_fill_survive_sigkill(
    tmp_path: Path, etcd_server: EtcdServer
) -> None:
    """Small groups (one add at a time, as a paced load sends them) are written over the zeros
    the journal keeps ahead of its last record (``journal_prealloc_kbytes``). A real kill -9
    leaves those zeros after the last record; every acknowledged add must read back after the
    restart, and the journal must go on appending."""
    bookie = BookieProcess(data_dir=tmp_path / "b", metadata_url=etcd_server.url)
    await bookie.astart()
    try:
        payloads = {i: bytes([i % 251]) * (200 + (i * 53) % 1800) for i in range(200)}
        async with BookieClient(bookie.address) as client:
            for i in range(200):  # each acknowledged before the next: a group of one
                assert (await client.add([entry(8, i, payloads[i])], MK))[0].status == pb.OK
        await bookie.akill()
        segment = sorted((tmp_path / "b" / "journal").glob("*.log"))[-1]
        assert segment.read_bytes().endswith(bytes(64 * 1024))  # the fill, left by the kill
        await bookie.astart()
        async with BookieClient(bookie.address) as client:
            got = await client.read_range(8, 0, 199)
            assert [(r.status, r.entry_id) for r in got] == [(pb.OK, i) for i in range(200)]
            assert all(r.entry.payload == payloads[r.entry_id] for r in got)
            assert (await client.add([entry(8, 200, b"after")], MK))[0].status == pb.OK
            assert (await client.read_entry(8, 200)).entry.payload == b"after"
    finally:
        await bookie.astop()


async def test_fence_survives_sigkill(tmp_path: Path, etcd_server: EtcdServer) -> None:
    bookie = BookieProcess(data_dir=tmp_path / "b", metadata_url=etcd_server.url)
    await bookie.astart()
    try:
        async with BookieClient(bookie.address) as client:
            assert (await client.add([entry(9, 0, b"a")], MK))[0].status == pb.OK
            fenced = await client.fence(9, MK)
            assert (fenced.status, fenced.last_entry_id) == (pb.OK, 0)
        await bookie.akill()
        await bookie.astart()
        async with BookieClient(bookie.address) as client:
            assert (await client.add([entry(9, 1, b"b")], MK))[0].status == pb.FENCED
            recovery = await client.add([entry(9, 1, b"b")], MK, recovery=True)
            assert recovery[0].status == pb.OK
    finally:
        await bookie.astop()


async def test_wiped_data_dir_refuses_to_start(tmp_path: Path, etcd_server: EtcdServer) -> None:
    bookie = BookieProcess(data_dir=tmp_path / "b", metadata_url=etcd_server.url)
    await bookie.astart()
    assert await bookie.astop() == 0
    shutil.rmtree(bookie.data_dir)
    bookie.spawn()
    code = await asyncio.to_thread(bookie.wait_exit, 30)
    assert code == 2
    out = bookie.log_text(since_start=True)
    assert "refusing to start" in out
    assert "has a cookie in metadata" in out
    assert "data was wiped" in out


async def test_foreign_data_dir_refuses_to_start(tmp_path: Path, etcd_server: EtcdServer) -> None:
    first = BookieProcess(data_dir=tmp_path / "a", metadata_url=etcd_server.url)
    await first.astart()
    assert await first.astop() == 0
    intruder = BookieProcess(data_dir=first.data_dir, metadata_url=etcd_server.url)
    intruder.spawn()
    code = await asyncio.to_thread(intruder.wait_exit, 30)
    assert code == 2
    out = intruder.log_text(since_start=True)
    assert f"belongs to bookie {first.id!r}" in out
    # The rightful owner still starts on it.
    await first.astart()
    await first.astop()


async def test_registration_vanishes_after_sigkill(tmp_path: Path, etcd_server: EtcdServer) -> None:
    bookie = BookieProcess(
        data_dir=tmp_path / "b", metadata_url=etcd_server.url, session_timeout_s=2.0
    )
    store = await open_store(etcd_server.url)
    try:
        await bookie.astart()
        key = keys.bookie_available(bookie.id)
        current = await store.get(key)
        assert current is not None
        registration = ledger_pb2.BookieRegistration.FromString(current.value)
        assert (registration.address, registration.read_only) == (bookie.address, False)
        await bookie.akill()
        async with asyncio.timeout(15):
            while await store.get(key) is not None:  # noqa: ASYNC110 - polls etcd, not a flag
                await asyncio.sleep(0.2)
        # Restarting registers again.
        await bookie.astart()
        assert await store.get(key) is not None
        await bookie.astop()
        assert await store.get(key) is None
    finally:
        await bookie.astop()
        await store.close()


async def test_read_only_flag(tmp_path: Path, etcd_server: EtcdServer) -> None:
    bookie = BookieProcess(
        data_dir=tmp_path / "b", metadata_url=etcd_server.url, extra_args=["--read-only"]
    )
    store = await open_store(etcd_server.url)
    try:
        await bookie.astart()
        current = await store.get(keys.bookie_available(bookie.id))
        assert current is not None
        assert ledger_pb2.BookieRegistration.FromString(current.value).read_only
        async with BookieClient(bookie.address) as client:
            assert (await client.info()).read_only
            assert (await client.add([entry(1, 0, b"x")], MK))[0].status == pb.READ_ONLY
    finally:
        await bookie.astop()
        await store.close()


async def test_sigterm_during_adds_exits_cleanly_and_keeps_acknowledged(
    tmp_path: Path, etcd_server: EtcdServer
) -> None:
    bookie = BookieProcess(data_dir=tmp_path / "b", metadata_url=etcd_server.url)
    await bookie.astart()
    acked: list[int] = []

    async def requests() -> AsyncIterator[pb.AddRequest]:
        for batch_id in range(500):
            entries = [entry(21, batch_id * 10 + i, b"s" * 512) for i in range(10)]
            yield pb.AddRequest(
                batch_id=batch_id, entries=[pb.AddEntry(entry=e, master_key=MK) for e in entries]
            )
            await asyncio.sleep(0.01)

    async def stream() -> None:
        async with BookieClient(bookie.address) as client:
            try:
                async for response in client.stub.AddEntries(requests(), timeout=20):
                    acked.extend(r.entry_id for r in response.results if r.status == pb.OK)
            except grpc.aio.AioRpcError:
                pass  # the bookie went away mid-stream, as expected

    streaming = asyncio.create_task(stream())
    async with asyncio.timeout(10):
        while len(acked) < 50:  # noqa: ASYNC110 - waits on the stream task's progress
            await asyncio.sleep(0.02)
    assert await bookie.astop() == 0
    await asyncio.wait_for(streaming, 20)
    assert acked
    await bookie.astart()
    try:
        async with BookieClient(bookie.address) as client:
            got = {r.entry_id for r in await client.read_range(21, 0, 4999) if r.status == pb.OK}
        assert set(acked) <= got
    finally:
        await bookie.astop()


async def test_second_process_on_same_data_dir_refuses(
    tmp_path: Path, etcd_server: EtcdServer
) -> None:
    first = BookieProcess(data_dir=tmp_path / "b", metadata_url=etcd_server.url)
    await first.astart()
    store = await open_store(etcd_server.url)
    try:
        twin = BookieProcess(
            data_dir=first.data_dir, metadata_url=etcd_server.url, bookie_id=first.id
        )
        twin.spawn()
        assert await asyncio.to_thread(twin.wait_exit, 30) == 3
        assert "another bookie process" in twin.log_text(since_start=True)
        # The running bookie's registration was not touched.
        current = await store.get(keys.bookie_available(first.id))
        assert current is not None
        assert ledger_pb2.BookieRegistration.FromString(current.value).address == first.address
    finally:
        await first.astop()
        await store.close()


async def test_a_journal_on_its_own_dir_is_used_kept_and_checked(
    tmp_path: Path, etcd_server: EtcdServer
) -> None:
    journal = tmp_path / "journal-volume"
    bookie = BookieProcess(
        data_dir=tmp_path / "b",
        metadata_url=etcd_server.url,
        extra_args=["--journal-dir", str(journal), "--ledger-dir", str(tmp_path / "ledgers")],
    )
    await bookie.astart()
    async with BookieClient(bookie.address) as client:
        assert (await client.add([entry(5, 0, b"kept")], MK))[0].status == pb.OK
    assert await bookie.astop() == 0
    assert list(journal.glob("*.log"))
    assert (journal / "cookie").exists()
    assert list((tmp_path / "ledgers" / "entrylogs").glob("*.log"))
    assert not (bookie.data_dir / "journal").exists()

    await bookie.astart()  # the same layout: starts, and still holds the entry
    async with BookieClient(bookie.address) as client:
        assert (await client.read_entry(5, 0)).entry.payload == b"kept"
    assert await bookie.astop() == 0

    # The journal volume comes back empty (replaced, or not mounted): refused, not lost.
    shutil.rmtree(journal)
    bookie.spawn()
    assert await asyncio.to_thread(bookie.wait_exit, 30) == 2
    assert f"the journal dir {journal} is empty" in bookie.log_text(since_start=True)

    # The journal moved elsewhere: refused, naming both layouts.
    bookie.extra_args[1] = str(tmp_path / "elsewhere")
    bookie.spawn()
    assert await asyncio.to_thread(bookie.wait_exit, 30) == 2
    assert "its directories moved" in bookie.log_text(since_start=True)
