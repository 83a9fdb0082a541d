"""The bookie core's BookKeeper semantics, on a real journal and RocksDB in a temp dir."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import crc32c
import pytest
from prometheus_client.parser import text_string_to_metric_families

from magnetar.bookie.bookie import Bookie
from magnetar.bookie.bookie_metrics import observe_bookie
from magnetar.bookie.bookie_protocol import AddOp, Status
from magnetar.bookie.config import BookieConfig
from magnetar.bookie.disk_monitor import DiskUsage
from magnetar.bookie.journal import JournalConfig
from magnetar.telemetry.metrics import Metrics

MK = b"key-1"


def op(
    ledger: int, entry: int, payload: bytes = b"p", *, mk: bytes = MK, recovery: bool = False
) -> AddOp:
    return AddOp(ledger, entry, entry - 1, payload, 1000 + entry, mk, recovery)


def config(path: Path, **kw: object) -> BookieConfig:
    return BookieConfig(data_dir=path, journal=JournalConfig(sync=False), **kw)  # type: ignore[arg-type]


@pytest.fixture
async def bookie(tmp_path: Path) -> AsyncIterator[Bookie]:
    b = await Bookie.open(config(tmp_path))
    yield b
    await b.close()


async def test_add_then_read(bookie: Bookie) -> None:
    for i in range(3):
        assert await bookie.add(op(1, i, bytes([i]) * 10)) is Status.OK
    result = await bookie.read_entry(1, 1)
    assert result.status is Status.OK
    assert result.entry is not None
    assert (result.entry.payload, result.entry.digest, result.entry.lac) == (b"\x01" * 10, 1001, 0)
    last = await bookie.read_entry(1, -1)
    assert last.entry is not None
    assert last.entry.entry_id == 2
    lac = bookie.read_lac(1)
    assert (lac.status, lac.lac, lac.last_entry_id) == (Status.OK, 1, 2)


async def test_missing_ledger_and_entry(bookie: Bookie) -> None:
    assert (await bookie.read_entry(42, 0)).status is Status.NO_SUCH_LEDGER
    assert bookie.read_lac(42).status is Status.NO_SUCH_LEDGER
    assert (await bookie.read_range(42, 0, 5))[0] is Status.NO_SUCH_LEDGER
    await bookie.add(op(42, 0))
    assert (await bookie.read_entry(42, 1)).status is Status.NO_SUCH_ENTRY


async def test_master_key_mismatch_is_unauthorized(bookie: Bookie) -> None:
    assert await bookie.add(op(2, 0)) is Status.OK
    assert await bookie.add(op(2, 1, mk=b"other")) is Status.UNAUTHORIZED
    assert (await bookie.fence(2, b"other")).status is Status.UNAUTHORIZED
    assert (await bookie.read_entry(2, 1)).status is Status.NO_SUCH_ENTRY


async def test_fence_rejects_old_writer_accepts_recovery(bookie: Bookie) -> None:
    for i in range(3):
        await bookie.add(op(3, i))
    fenced = await bookie.fence(3, MK)
    assert (fenced.status, fenced.lac, fenced.last_entry_id) == (Status.OK, 1, 2)
    assert await bookie.add(op(3, 3)) is Status.FENCED
    assert await bookie.add(op(3, 3, recovery=True)) is Status.OK
    assert (await bookie.read_entry(3, 3)).status is Status.OK


async def test_fence_read_on_unknown_ledger_fences_it(bookie: Bookie) -> None:
    result = await bookie.read_entry(4, -1, fence=True, master_key=MK)
    assert result.status is Status.NO_SUCH_ENTRY
    # A writer that never reached this bookie before the fence is refused now.
    assert await bookie.add(op(4, 0)) is Status.FENCED


async def test_fence_and_entries_survive_restart(tmp_path: Path) -> None:
    b = await Bookie.open(config(tmp_path))
    await b.add(op(5, 0))
    await b.fence(5, MK)
    await b.add(op(6, 0, b"six"))
    await b.close()
    b = await Bookie.open(config(tmp_path))
    try:
        assert await b.add(op(5, 1)) is Status.FENCED
        assert await b.add(op(6, 1, mk=b"bad")) is Status.UNAUTHORIZED
        read = await b.read_entry(6, 0)
        assert read.entry is not None
        assert read.entry.payload == b"six"
    finally:
        await b.close()


async def test_read_only_mode_follows_free_disk(tmp_path: Path) -> None:
    b = await Bookie.open(config(tmp_path, min_free_disk_fraction=0.10))
    modes: list[bool] = []
    b.add_mode_listener(modes.append)
    try:
        await b.add(op(7, 0))
        b.disk_usage_probe = lambda _: DiskUsage(free_bytes=5, total_bytes=100)
        await b.check_disk()
        assert b.read_only
        assert await b.add(op(7, 1)) is Status.READ_ONLY
        assert (await b.read_entry(7, 0)).status is Status.OK  # reads still served
        b.disk_usage_probe = lambda _: DiskUsage(free_bytes=11, total_bytes=100)
        await b.check_disk()
        assert b.read_only  # within the hysteresis margin
        b.disk_usage_probe = lambda _: DiskUsage(free_bytes=50, total_bytes=100)
        await b.check_disk()
        assert not b.read_only
        assert await b.add(op(7, 1)) is Status.OK
        assert modes == [True, False]
    finally:
        await b.close()


async def test_a_full_journal_volume_makes_the_bookie_read_only_too(tmp_path: Path) -> None:
    journal = tmp_path / "journal-volume"
    b = await Bookie.open(
        config(tmp_path / "data", min_free_disk_fraction=0.10, journal_location=journal)
    )
    try:
        b.disk_usage_probe = lambda path: DiskUsage(
            free_bytes=5 if path == journal else 90, total_bytes=100
        )
        await b.check_disk()
        assert await b.add(op(9, 0)) is Status.READ_ONLY
    finally:
        await b.close()


async def test_forced_read_only(tmp_path: Path) -> None:
    b = await Bookie.open(config(tmp_path, force_read_only=True))
    try:
        assert await b.add(op(8, 0)) is Status.READ_ONLY
    finally:
        await b.close()


async def test_delete_and_gc(tmp_path: Path) -> None:
    b = await Bookie.open(config(tmp_path))
    for i in range(10):
        await b.add(op(9, i))
    await b.add(op(10, 0))
    assert await b.delete_ledger(9) is Status.OK
    assert (await b.read_entry(9, 0)).status is Status.NO_SUCH_LEDGER
    assert await b.add(op(9, 10)) is Status.NO_SUCH_LEDGER
    assert [x.ledger_id for x in await b.list_ledgers()] == [10]
    assert await b.collect_garbage() == 1
    assert b._storage.read_range(9, 0, 100) == []
    assert b._storage.get_entry(10, 0) is not None
    await b.close()
    b = await Bookie.open(config(tmp_path))
    try:
        assert (await b.read_entry(9, 0)).status is Status.NO_SUCH_LEDGER
        assert await b.collect_garbage() == 0
        assert await b.delete_ledger(9) is Status.OK  # idempotent
    finally:
        await b.close()


async def test_list_ledgers_with_ranges(bookie: Bookie) -> None:
    for i in [0, 1, 2, 5, 6, 9]:
        await bookie.add(op(11, i))
    await bookie.add(op(12, 0))
    await bookie.fence(12, MK)
    listing = await bookie.list_ledgers(include_ranges=True)
    assert [(x.ledger_id, x.entry_count, x.last_entry_id, x.fenced) for x in listing] == [
        (11, 6, 9, False),
        (12, 1, 0, True),
    ]
    assert listing[0].ranges == ((0, 2), (5, 6), (9, 9))
    assert (await bookie.list_ledgers())[0].ranges == ()


async def test_read_range_respects_max_bytes(bookie: Bookie) -> None:
    for i in range(10):
        await bookie.add(op(13, i, b"x" * 100))
    status, entries = await bookie.read_range(13, 2, 8, max_bytes=350)
    assert status is Status.OK
    assert [e.entry_id for e in entries] == [2, 3, 4]
    _, entries = await bookie.read_range(13, 8, 20)
    assert [e.entry_id for e in entries] == [8, 9]


async def test_batch_statuses_in_order(bookie: Bookie) -> None:
    await bookie.add(op(14, 0))
    pending = await bookie.submit_adds([op(14, 1), op(14, 2, mk=b"bad"), op(15, 0)])
    assert await pending.wait() == [Status.OK, Status.UNAUTHORIZED, Status.OK]


async def test_known_payload_checksums_go_with_the_adds_the_bookie_accepts(
    bookie: Bookie,
) -> None:
    """Checksums an in-process caller gives with a batch follow the adds accepted: one add
    refused in the middle takes its checksum out with it, so every stored entry's records (the
    journal's, the entry log's, combined from them) still check, and each entry reads back."""
    payloads = [os.urandom(20_000 + i) for i in range(3)]
    ops = [op(16, 0, payloads[0]), op(16, 1, payloads[1], mk=b"bad"), op(17, 0, payloads[2])]
    crcs = [crc32c.crc32c(p) for p in payloads]
    pending = await bookie.submit_adds(ops, crcs)
    assert await pending.wait() == [Status.OK, Status.UNAUTHORIZED, Status.OK]
    for ledger, payload in ((16, payloads[0]), (17, payloads[2])):
        read = await bookie.read_entry(ledger, 0)
        assert read.entry is not None
        assert read.entry.payload == payload


async def test_a_corrupt_entry_is_answered_as_an_internal_error(bookie: Bookie) -> None:
    """An entry whose stored record fails its check (here: stored with a wrong checksum given)
    is answered INTERNAL by both reads, not raised: a reader then turns to another replica at
    once. The other entries read as before."""
    good, bad = os.urandom(20_000), os.urandom(20_000)
    pending = await bookie.submit_adds(
        [op(18, 0, good), op(18, 1, bad)], [crc32c.crc32c(good), crc32c.crc32c(bad) ^ 1]
    )
    assert await pending.wait() == [Status.OK, Status.OK]
    assert (await bookie.read_entry(18, 1)).status is Status.INTERNAL
    assert await bookie.read_range(18, 1, 1) == (Status.INTERNAL, [])
    read = await bookie.read_entry(18, 0)
    assert read.entry is not None
    assert read.entry.payload == good


async def test_journal_failure_makes_bookie_read_only(tmp_path: Path) -> None:
    b = await Bookie.open(config(tmp_path))
    modes: list[bool] = []
    b.add_mode_listener(modes.append)
    try:
        assert await b.add(op(16, 0)) is Status.OK

        def broken(records: object) -> None:
            raise OSError("disk on fire")

        b._storage.apply = broken  # type: ignore[method-assign]
        assert await b.add(op(16, 1)) is Status.INTERNAL
        assert b.read_only
        assert await b.add(op(16, 2)) is Status.READ_ONLY
        await b.check_disk()
        assert modes == [True]
        assert (await b.read_entry(16, 0)).status is Status.OK
    finally:
        await b.close()


async def test_gc_reclaims_entry_logs_with_the_configured_size_and_rate(tmp_path: Path) -> None:
    """The entry-log size limit reaches storage (many small logs here), and the GC pass
    removes the logs a deleted ledger leaves dead, keeping the live ledger readable."""
    cfg = config(tmp_path, entry_log_size_limit=2000, compaction_rate_by_bytes=10**9)
    b = await Bookie.open(cfg)
    for i in range(20):
        await b.add(op(20, i, b"x" * 500))
    await b.add(op(21, 0, b"live"))
    await b.close()  # seals the current log: every log is GC's now
    logs = tmp_path / "ledgers" / "entrylogs"
    before = len(list(logs.glob("*.log")))
    assert before >= 5
    b = await Bookie.open(cfg)
    try:
        assert await b.delete_ledger(20) is Status.OK
        assert await b.collect_garbage() == 1
        assert len(list(logs.glob("*.log"))) <= 2  # the one holding ledger 21, and the current
        result = await b.read_entry(21, 0)
        assert result.entry is not None
        assert result.entry.payload == b"live"
    finally:
        await b.close()


async def test_decommissioned_bookie_refuses_adds_but_serves_reads(bookie: Bookie) -> None:
    heard: list[bool] = []
    bookie.add_mode_listener(heard.append)
    assert await bookie.add(op(9, 0)) is Status.OK
    bookie.set_decommissioned(True)
    assert bookie.read_only
    assert await bookie.add(op(9, 1)) is Status.READ_ONLY
    assert (await bookie.read_entry(9, 0)).status is Status.OK
    bookie.set_decommissioned(False)  # a cancelled decommission
    assert await bookie.add(op(9, 1)) is Status.OK
    assert heard == [True, False]


@pytest.mark.parametrize("stage_metrics", [False, True])
async def test_journal_stage_histograms_are_exported_when_asked(
    tmp_path: Path, stage_metrics: bool
) -> None:
    """``journal_stage_metrics`` puts the journal's per-group stage recorders (queue wait,
    apply, hand-back to the loop) on /metrics; off (the default) they are not exported."""
    journal = JournalConfig(sync=True, stage_metrics=stage_metrics)
    b = await Bookie.open(BookieConfig(data_dir=tmp_path, journal=journal))
    try:
        metrics = Metrics()
        observe_bookie(metrics, b)
        for i in range(3):
            assert await b.add(op(1, i)) is Status.OK
        exported = {
            sample.name: sample.value
            for family in text_string_to_metric_families(metrics.render().decode())
            for sample in family.samples
        }
    finally:
        await b.close()
    assert exported["bookie_journal_sync_latency_seconds_count"] >= 1
    for name in ("queue_wait", "apply_latency", "handback_latency"):
        count = exported.get(f"bookie_journal_{name}_seconds_count")
        assert (count is not None and count >= 1) if stage_metrics else count is None
