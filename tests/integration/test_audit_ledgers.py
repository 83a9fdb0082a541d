"""``magnetar audit ledgers`` on Spark (local mode, the session's one SparkSession) against a
real etcd and real bookie processes, with ledgers written E3 Wq2 Aq2 by the real ledger client.

The tests run in file order on one cluster: known faults are injected (replicas removed from
one bookie's index, a digest corrupted, a ledger orphaned, ledger metadata removed under its
entries, a managed ledger pointing at nothing) and the audit must report exactly those; an
unreachable bookie or metadata store gets exit code 3; finally a bookie is wiped, the audit
reports its entries below write quorum, autorecovery re-replicates them, and the audit of the
then clean cluster passes. Findings are compared as sets of single entries (kind, ledger,
bookie, entry), so the comparison does not depend on how ranges were merged.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from magnetar.audit.findings import ExitCode
from magnetar.ids import LedgerId
from magnetar.ledger import BookKeeper, LedgerClientConfig
from magnetar.ledger.distribution import write_set
from magnetar.ledger.metadata import LedgerMetadataView
from magnetar.metadata import keys
from magnetar.metadata.factory import open_store
from magnetar.wire import bookie_pb2, ledger_pb2
from tests.kit.autorecovery import AutorecoveryProcess
from tests.kit.bookie import BookieClient, BookieProcess
from tests.kit.bookie_index import drop_entries, set_digest
from tests.kit.etcd import EtcdServer
from tests.kit.ports import free_port
from tests.kit.process import MAGNETAR_CLI

# A Spark test may pay for starting the session's JVM: more than the default 120 s under load.
pytestmark = [pytest.mark.etcd, pytest.mark.timeout(300)]

CONFIG = LedgerClientConfig(add_timeout_s=3, read_timeout_s=3, bookie_quarantine_s=3)
ENTRIES = 40
Cell = tuple[str, int, str | None, int | None]  # kind, ledger, bookie, entry


@dataclass
class Cluster:
    etcd: EtcdServer
    bookies: list[BookieProcess]
    tmp: Path
    ledgers: dict[str, list[int]] = field(default_factory=dict)  # managed ledger -> ledgers

    @property
    def url(self) -> str:
        return self.etcd.url

    def bookie(self, bookie_id: str) -> BookieProcess:
        return next(b for b in self.bookies if b.bookie_id == bookie_id)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    tmp = tmp_path_factory.mktemp("audit")
    etcd = EtcdServer(data_dir=tmp / "etcd")
    etcd.start()
    bookies = [
        BookieProcess(tmp / f"b{i}", etcd.url, session_timeout_s=2, journal_sync=False)
        for i in range(3)
    ]
    try:
        for bookie in bookies:
            bookie.start()
        yield Cluster(etcd, bookies, tmp)
    finally:
        for bookie in bookies:
            bookie.stop()
        etcd.stop()


# -- cluster work (each helper opens and closes its own client) ------------------------------


async def _write(url: str, count: int) -> list[tuple[int, LedgerMetadataView]]:
    store = await open_store(url, session_timeout_s=2)
    bk = await BookKeeper.start(store, CONFIG)
    written = []
    try:
        for n in range(count):
            handle = await bk.create_ledger(3, 2, 2)
            await asyncio.gather(*(handle.append(b"e%d-%d" % (n, i)) for i in range(ENTRIES)))
            await handle.close()
            written.append(
                (int(handle.ledger_id), (await bk.manager.read(handle.ledger_id)).metadata)
            )
    finally:
        await bk.close()
        await store.close()
    return written


async def _reference(url: str, name: str, ledger_ids: list[int]) -> None:
    """Store a managed ledger's info naming ``ledger_ids`` (as the broker's managed ledger does)."""
    info = ledger_pb2.ManagedLedgerInfo(
        ledgers=[
            ledger_pb2.ManagedLedgerLedgerInfo(ledger_id=i, entries=ENTRIES) for i in ledger_ids
        ]
    )
    store = await open_store(url, session_timeout_s=2)
    try:
        await store.put(keys.managed_ledger_info(name), info.SerializeToString())
    finally:
        await store.close()


def write_ledgers(
    cluster: Cluster, count: int, managed_ledger: str | None
) -> list[tuple[int, LedgerMetadataView]]:
    written = asyncio.run(_write(cluster.url, count))
    if managed_ledger is not None:
        cluster.ledgers.setdefault(managed_ledger, []).extend(i for i, _ in written)
        asyncio.run(_reference(cluster.url, managed_ledger, cluster.ledgers[managed_ledger]))
    return written


def replicas(meta: LedgerMetadataView, entry_id: int) -> list[str]:
    ensemble = meta.ensemble_for(entry_id)
    return [ensemble[p] for p in write_set(entry_id, len(ensemble), meta.write_quorum)]


def cells_of(
    ledger_id: int, meta: LedgerMetadataView, kind: str, bookie: str | None = None
) -> set[Cell]:
    return {
        (kind, ledger_id, b, e)
        for e in range(meta.last_entry_id + 1)
        for b in replicas(meta, e)
        if bookie is None or b == bookie
    }


# -- running the audit ---------------------------------------------------------------------


@dataclass
class Result:
    code: int
    summary: dict[str, Any]
    cells: set[Cell]
    lines: list[str]


def run_audit(cluster: Cluster, spark: Any, out: Path) -> Result:
    from magnetar.audit.ledgers_job import LedgersAuditOptions, run_ledgers_audit

    lines: list[str] = []
    options = LedgersAuditOptions(metadata_url=cluster.url, output=out, partitions=4)
    code = run_ledgers_audit(options, lines.append, lines.append, spark=spark)
    summary = json.loads((out / "summary.json").read_text()) if code != ExitCode.UNREACHABLE else {}
    cells: set[Cell] = set()
    if code != ExitCode.UNREACHABLE:
        for row in spark.read.parquet(str(out / "findings")).collect():
            if row["first_entry"] is None:
                cells.add((row["kind"], row["ledger_id"], row["bookie"], None))
            else:
                assert row["entries"] == row["last_entry"] - row["first_entry"] + 1, row
                for e in range(row["first_entry"], row["last_entry"] + 1):
                    cells.add((row["kind"], row["ledger_id"], row["bookie"], e))
    return Result(int(code), summary, cells, lines)


# -- the tests, in order --------------------------------------------------------------------


def test_b_injected_faults_are_reported_exactly(
    cluster: Cluster, spark: Any, tmp_path: Path
) -> None:
    write_ledgers(cluster, 3, "t/ns/persistent/clean")  # stays clean until test e
    (l1, m1), (l2, m2) = write_ledgers(cluster, 2, "t/ns/persistent/faulty")
    [(orphan, _m_orphan)] = write_ledgers(cluster, 1, None)
    [(ghost, m_ghost)] = write_ledgers(cluster, 1, None)
    missing_ref = 10**6
    asyncio.run(_reference(cluster.url, "t/ns/persistent/faulty", [l1, l2, missing_ref]))

    async def forget_ghost() -> None:  # metadata gone, entries left on the bookies
        store = await open_store(cluster.url, session_timeout_s=2)
        try:
            await store.delete(keys.ledger_meta(LedgerId(ghost)))
        finally:
            await store.close()

    asyncio.run(forget_ghost())

    # One bookie loses the copies it holds of l1's entries 9..20 and one digest of l2.
    victim_id = m1.ensemble_for(0)[0]
    dropped = [e for e in range(9, 21) if victim_id in replicas(m1, e)]
    corrupt = next(e for e in range(ENTRIES) if victim_id in replicas(m2, e))
    victim = cluster.bookie(victim_id)
    victim.stop()
    drop_entries(victim.data_dir, l1, dropped)
    set_digest(victim.data_dir, l2, corrupt, 0xDEADBEEF)
    victim.start()

    result = run_audit(cluster, spark, tmp_path / "report")
    expected = (
        {("missing_entries", l1, victim_id, e) for e in dropped}
        | {("digest_mismatch", l2, b, corrupt) for b in replicas(m2, corrupt)}
        | {("unreferenced_ledger", orphan, None, None)}
        | cells_of(ghost, m_ghost, "extra_entries")
        | {("missing_ledger", missing_ref, None, None)}
    )
    assert result.code == ExitCode.FINDINGS, result.lines
    assert result.cells == expected
    counts = result.summary["findings"]
    assert counts["missing_entries"]["entries"] == len(dropped)
    assert counts["extra_entries"]["entries"] == ENTRIES * 2
    assert result.summary["underReplicatedEntriesByBookie"] == {victim_id: len(dropped)}
    assert result.summary["verdict"] == "fail"
    page = (tmp_path / "report" / "report.html").read_text()
    assert "FAIL" in page
    assert "<svg" in page
    assert victim_id in page

    asyncio.run(_clean_up(cluster, [l1, l2, orphan], ghost, m_ghost))


async def _clean_up(
    cluster: Cluster, ledgers: list[int], ghost: int, m_ghost: LedgerMetadataView
) -> None:
    """Undo test b's faults: delete its ledgers (metadata and bookies) and managed ledger, and
    the ghost ledger's entries on its bookies."""
    store = await open_store(cluster.url, session_timeout_s=2)
    bk = await BookKeeper.start(store, CONFIG)
    try:
        for ledger_id in ledgers:
            await bk.delete_ledger(LedgerId(ledger_id))
        await store.delete(keys.managed_ledger_info("t/ns/persistent/faulty"))
        cluster.ledgers.pop("t/ns/persistent/faulty")
        for bookie_id in m_ghost.all_bookies():
            async with BookieClient(cluster.bookie(bookie_id).address) as client:
                request = bookie_pb2.DeleteLedgerRequest(ledger_id=ghost)
                await client.stub.DeleteLedger(request, timeout=5)
    finally:
        await bk.close()
        await store.close()


async def test_c_an_unreachable_bookie_gives_exit_code_3(
    cluster: Cluster, spark: Any, tmp_path: Path
) -> None:
    """A registration whose bookie does not answer (crashed, session not yet expired)."""
    address = f"127.0.0.1:{free_port()}"
    store = await open_store(cluster.url, session_timeout_s=5)
    try:
        registration = ledger_pb2.BookieRegistration(address=address)
        await store.create(
            keys.bookie_available("bookie-silent"), registration.SerializeToString(), ephemeral=True
        )
        result = await asyncio.to_thread(run_audit, cluster, spark, tmp_path / "report")
    finally:
        await store.close()
    assert result.code == ExitCode.UNREACHABLE
    assert any("bookie-silent" in line and address in line for line in result.lines), result.lines
    assert not (tmp_path / "report" / "summary.json").exists()  # never a verdict


def test_d_an_unreachable_metadata_store_gives_exit_code_3(tmp_path: Path) -> None:
    url = f"etcd://127.0.0.1:{free_port()}"
    done = subprocess.run(
        [*MAGNETAR_CLI, "audit", "ledgers", "--metadata", url, "--output", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == ExitCode.UNREACHABLE, done.stderr
    assert url in done.stderr
    assert not (tmp_path / "summary.json").exists()


def test_e_a_wiped_bookie_is_reported_until_autorecovery_restores_it(
    cluster: Cluster, spark: Any, tmp_path: Path
) -> None:
    survivors = asyncio.run(_read_all(cluster.url))
    victim = cluster.bookies[1]
    victim.kill()
    shutil.rmtree(victim.data_dir)
    cluster.bookies.remove(victim)
    spare = BookieProcess(
        cluster.tmp / "spare", cluster.url, session_timeout_s=2, journal_sync=False
    )
    spare.start()
    cluster.bookies.append(spare)
    _wait(
        lambda: victim.bookie_id not in asyncio.run(_registered(cluster.url)), "registration gone"
    )

    result = run_audit(cluster, spark, tmp_path / "wiped")
    expected = set().union(
        *(cells_of(i, m, "under_replicated", victim.bookie_id) for i, m in survivors.items())
    )
    assert result.code == ExitCode.FINDINGS, result.lines
    assert expected
    assert result.cells == expected
    assert result.summary["scanned"]["goneBookies"] == [victim.bookie_id]

    recovery = AutorecoveryProcess(cluster.tmp / "ar", cluster.url)
    recovery.start()
    try:
        _wait(lambda: asyncio.run(_repaired(cluster.url, victim.bookie_id)), "re-replication", 90)
    finally:
        recovery.stop()
    # Repaired, the cluster is clean again: the audit passes and says so everywhere.
    result = run_audit(cluster, spark, tmp_path / "repaired")
    assert result.code == ExitCode.PASSED, (result.lines, result.cells)
    assert result.cells == set()
    assert result.summary["verdict"] == "pass"
    assert result.summary["scanned"]["ledgers"] == 3
    assert result.summary["scanned"]["entriesListed"] == 3 * ENTRIES * 2  # Wq copies each
    assert "PASS" in (tmp_path / "repaired" / "report.html").read_text()
    assert any("entries listed" in line for line in result.lines), result.lines
    assert "ledgers audit of" in result.lines[-1]
    assert "PASS" in result.lines[-1]


async def _read_all(url: str) -> dict[int, LedgerMetadataView]:
    store = await open_store(url, session_timeout_s=2)
    try:
        found = await store.list(keys.LEDGER_META_PREFIX)
        return {keys.ledger_id_of(k): LedgerMetadataView.decode(v.value) for k, v in found}
    finally:
        await store.close()


async def _registered(url: str) -> set[str]:
    store = await open_store(url, session_timeout_s=2)
    try:
        return {keys.bookie_id_of(k) for k in await store.list_keys(keys.BOOKIE_AVAILABLE_PREFIX)}
    finally:
        await store.close()


async def _repaired(url: str, victim: str) -> bool:
    metas = await _read_all(url)
    store = await open_store(url, session_timeout_s=2)
    try:
        marks = await store.list_keys(keys.UNDER_REPLICATED_PREFIX)
    finally:
        await store.close()
    return not marks and all(victim not in m.all_bookies() for m in metas.values())


def _wait(check: Any, what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"not within {timeout_s:g}s: {what}"
        time.sleep(0.3)


def test_f_a_bookie_failing_inside_spark_is_named_by_the_driver(spark: Any) -> None:
    """A bookie that stops answering after the probe fails its Spark task in an executor; the
    driver finds which bookie in Spark's failure (the path :func:`run_ledgers_audit` takes)."""
    from magnetar.audit.errors import find_unreachable
    from magnetar.audit.sources import BOOKIE_ENTRIES

    address = f"127.0.0.1:{free_port()}"
    listing = (
        spark.read.format(BOOKIE_ENTRIES)
        .option("bookies", json.dumps({"bookie-gone-quiet": address}))
        .option("max_ledger_id", "10")
        .option("timeout_s", "2")
        .load()
    )
    with pytest.raises(Exception) as failure:  # Spark wraps it in its own exception types
        listing.count()
    found = find_unreachable(str(failure.value))
    assert found is not None, str(failure.value)[-2000:]
    assert (found.what, found.name, found.address) == ("bookie", "bookie-gone-quiet", address)
