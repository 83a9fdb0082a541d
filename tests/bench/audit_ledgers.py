"""Benchmark: ``magnetar audit ledgers`` over a million entries on three real bookies.

Usage::

    python -m tests.bench.audit_ledgers [--entries 1000000] [--ledgers 100] [--master local[2]]
        [--json FILE]

Starts a real etcd and three ``magnetar bookie`` processes on loopback (journal fsync off: the
write phase only prepares data), writes ``--entries`` entries of 16 bytes through the real
ledger client (E=3 Wq=2 Aq=2, so the bookies hold twice as many replicas), references every
ledger from managed ledgers, then runs the audit in this process on a fresh SparkSession.
Prints the machine and settings first, then: the audit's wall time, replicas listed per second,
and peak memory of the driver (this Python process), the Spark JVM and the Spark Python
workers (the executors' Python side, sampled from /proc every 0.2 s: the largest single worker
and the largest sum). Not a test: numbers are recorded in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

from magnetar.ledger import BookKeeper, LedgerClientConfig
from magnetar.metadata import keys
from magnetar.metadata.factory import open_store
from magnetar.wire import ledger_pb2
from tests.bench.report import bench_json, header
from tests.kit.bookie import BookieProcess
from tests.kit.etcd import EtcdServer

PAYLOAD = b"0123456789abcdef"
WINDOW = 2000  # appends in flight per ledger
PARALLEL_LEDGERS = 4


async def write(url: str, entries: int, ledgers: int) -> None:
    store = await open_store(url, session_timeout_s=10)
    bk = await BookKeeper.start(store, LedgerClientConfig(add_timeout_s=30))
    per_ledger = entries // ledgers
    written = 0
    started = time.monotonic()
    ids: list[int] = []

    async def one() -> None:
        nonlocal written
        handle = await bk.create_ledger(3, 2, 2)
        for first in range(0, per_ledger, WINDOW):
            count = min(WINDOW, per_ledger - first)
            await asyncio.gather(*(handle.append(PAYLOAD) for _ in range(count)))
            written += count
        await handle.close()
        ids.append(int(handle.ledger_id))

    try:
        for start in range(0, ledgers, PARALLEL_LEDGERS):
            await asyncio.gather(*(one() for _ in range(min(PARALLEL_LEDGERS, ledgers - start))))
            rate = written / (time.monotonic() - started)
            print(f"written {written} entries ({rate:,.0f}/s)", file=sys.stderr, flush=True)
        for n in range(0, len(ids), 10):  # ten ledgers per managed ledger
            info = ledger_pb2.ManagedLedgerInfo(
                ledgers=[ledger_pb2.ManagedLedgerLedgerInfo(ledger_id=i) for i in ids[n : n + 10]]
            )
            await store.put(
                keys.managed_ledger_info(f"bench/ns/persistent/t{n}"), info.SerializeToString()
            )
    finally:
        await bk.close()
        await store.close()


def _rss_kib(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of ``pid`` in KiB, (0, 0) once it is gone."""
    rss = hwm = 0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("VmHWM:"):
                hwm = int(line.split()[1])
    except OSError:
        pass
    return rss, hwm


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


class WorkerMemory(threading.Thread):
    """Samples the Python processes under the JVM: peak single RSS and peak total."""

    def __init__(self, jvm_pid: int) -> None:
        super().__init__(daemon=True)
        self.jvm_pid = jvm_pid
        self.peak_one = self.peak_total = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.2):
            sizes = [_rss_kib(p)[0] for p in _descendants(self.jvm_pid)]
            if sizes:
                self.peak_one = max(self.peak_one, max(sizes))
                self.peak_total = max(self.peak_total, sum(sizes))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--ledgers", type=int, default=100)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    settings = {
        "entries": args.entries, "ledgers": args.ledgers, "entry_bytes": len(PAYLOAD),
        "E/Wq/Aq": "3/2/2", "bookies": 3, "journal_fsync": False, "master": args.master,
    }  # fmt: skip
    print(header(settings), flush=True)
    from magnetar.audit.ledgers_job import LedgersAuditOptions, run_ledgers_audit
    from magnetar.audit.spark import session

    with tempfile.TemporaryDirectory(prefix="audit-bench-") as tmp_dir:
        tmp = Path(tmp_dir)
        etcd = EtcdServer(data_dir=tmp / "etcd")
        etcd.start()
        bookies = [BookieProcess(tmp / f"b{i}", etcd.url, journal_sync=False) for i in range(3)]
        try:
            for bookie in bookies:
                bookie.start()
            started = time.monotonic()
            asyncio.run(write(etcd.url, args.entries, args.ledgers))
            write_s = time.monotonic() - started
            spark = session(args.master)
            jvm_pid = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())  # type: ignore[union-attr]
            workers = WorkerMemory(jvm_pid)
            workers.start()
            lines: list[str] = []

            def say(line: str) -> None:
                lines.append(line)
                print(line, file=sys.stderr, flush=True)

            started = time.monotonic()
            code = run_ledgers_audit(
                LedgersAuditOptions(metadata_url=etcd.url, output=tmp / "report"),
                say, say, spark=spark,
            )  # fmt: skip
            audit_s = time.monotonic() - started
            workers.stop.set()
            jvm_hwm = _rss_kib(jvm_pid)[1]
            spark.stop()
        finally:
            for bookie in bookies:
                bookie.stop()
            etcd.stop()
    replicas = args.entries * 2
    summary = {
        **settings,
        "exit_code": int(code),
        "write_seconds": round(write_s, 1),
        "audit_seconds": round(audit_s, 1),
        "replicas_listed": replicas,
        "replicas_per_s": round(replicas / audit_s),
        "entries_per_s": round(args.entries / audit_s),
        "driver_python_peak_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "jvm_peak_mib": round(jvm_hwm / 1024),
        "python_worker_peak_mib": round(workers.peak_one / 1024),
        "python_workers_peak_total_mib": round(workers.peak_total / 1024),
        "cpu_count": os.cpu_count(),
    }
    bench_json(summary, args.json)


if __name__ == "__main__":
    main()
