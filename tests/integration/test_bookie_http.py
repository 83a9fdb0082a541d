"""A real ``magnetar bookie`` process's HTTP port: /metrics, /api/v1/bookie/state, is_ready."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from magnetar.wire import bookie_pb2 as pb
from tests.kit.bookie import BookieClient, BookieProcess, entry
from tests.kit.etcd import EtcdServer
from tests.kit.scrape import scrape, value

MK = b"master-key"


def get(url: str) -> tuple[int, str, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.headers["Content-Type"], response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read()


def state(bookie: BookieProcess) -> Any:
    status, content_type, body = get(bookie.http_url + "/api/v1/bookie/state")
    assert (status, content_type) == (200, "application/json")
    return json.loads(body)


async def test_state_ready_and_metrics(tmp_path: Path, etcd_server: EtcdServer) -> None:
    bookie = BookieProcess(data_dir=tmp_path / "b", metadata_url=etcd_server.url)
    await bookie.astart()
    try:
        assert await asyncio.to_thread(state, bookie) == {
            "running": True,
            "readOnly": False,
            "shuttingDown": False,
            "availableForHighPriorityWrites": True,
        }
        ready = await asyncio.to_thread(get, bookie.http_url + "/api/v1/bookie/is_ready")
        assert ready[0] == 200
        assert (await asyncio.to_thread(get, bookie.http_url + "/nope"))[0] == 404

        async with BookieClient(bookie.address) as client:
            results = await client.add([entry(7, i, b"payload") for i in range(3)], MK)
            assert [r.status for r in results] == [pb.OK] * 3
            assert (await client.read_entry(7, 1)).status == pb.OK
        samples = await asyncio.to_thread(scrape, bookie.http_url)
        assert value(samples, "bookie_journal_add_entries_total") == 3
        assert value(samples, "bookie_read_entries_total") == 1
        assert value(samples, "bookie_journal_syncs_total") >= 1
        assert value(samples, "bookie_journal_written_bytes_total") > 3 * len(b"payload")
        assert value(samples, "bookie_journal_sync_latency_seconds_count") >= 1
        assert value(samples, "bookie_ledgers_count") == 1
        assert value(samples, "bookie_ledger_storage_size_bytes") > 0
        assert value(samples, "bookie_read_only") == 0
    finally:
        assert await bookie.astop() == 0


async def test_read_only_bookie_is_ready_and_says_so(
    tmp_path: Path, etcd_server: EtcdServer
) -> None:
    bookie = BookieProcess(
        data_dir=tmp_path / "b", metadata_url=etcd_server.url, extra_args=["--read-only"]
    )
    await bookie.astart()
    try:
        current = await asyncio.to_thread(state, bookie)
        assert current["readOnly"] is True
        assert current["availableForHighPriorityWrites"] is False
        ready = await asyncio.to_thread(get, bookie.http_url + "/api/v1/bookie/is_ready")
        assert ready[0] == 200  # it still serves reads
        samples = await asyncio.to_thread(scrape, bookie.http_url)
        assert value(samples, "bookie_read_only") == 1
    finally:
        await bookie.astop()
