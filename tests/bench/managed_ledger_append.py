"""Benchmark: appends to a managed ledger over 3 real bookie processes (E=3, Wq=3, Aq=2).

Usage::

    python -m tests.bench.managed_ledger_append [--sizes 1024,65536] [--seconds 15]
        [--concurrency 256] [--no-fsync] [--json FILE]

Starts a real etcd and three ``magnetar bookie`` processes on loopback (journal fsync on unless
``--no-fsync``), opens one managed ledger through the real ledger client, and for each entry size
keeps ``--concurrency`` adds in flight for ``--seconds``. Prints a progress line every second
and a summary: entries/s, MB/s, add latency p50/p99/p99.9/max (from a sorted sample of every
add), plus the machine and the settings (first on stderr, and in the JSON). Not a test:
numbers are recorded in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from magnetar.ledger import BookKeeper, LedgerClientConfig
from magnetar.managed_ledger import ManagedLedgerConfig, ManagedLedgerFactory
from magnetar.metadata.factory import open_store
from tests.bench.report import header, machine, percentile
from tests.kit.bookie import BookieProcess
from tests.kit.etcd import EtcdServer


@dataclass(frozen=True)
class Result:
    entry_size: int
    concurrency: int
    fsync: bool
    seconds: float
    entries: int
    entries_per_s: float
    mb_per_s: float
    p50_ms: float
    p99_ms: float
    p999_ms: float
    max_ms: float


async def run_size(
    factory: ManagedLedgerFactory, size: int, seconds: float, concurrency: int, fsync: bool
) -> Result:
    ml = await factory.open(
        f"bench-{size}-{time.time_ns()}",
        ManagedLedgerConfig(ensemble_size=3, write_quorum=3, ack_quorum=2),
    )
    payload = os.urandom(size)
    latencies: list[float] = []
    done = 0
    stop_at = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal done
        while time.perf_counter() < stop_at:
            started = time.perf_counter()
            await ml.add_entry(payload)
            latencies.append(time.perf_counter() - started)
            done += 1

    async def progress() -> None:
        last, last_t = 0, time.perf_counter()
        while True:
            await asyncio.sleep(1.0)
            now = time.perf_counter()
            rate = (done - last) / (now - last_t)
            recent = sorted(latencies[last:done])
            print(
                f"  size={size} {rate:10.0f} entries/s {rate * size / 1e6:8.1f} MB/s "
                f"p50={percentile(recent, 0.5) * 1e3:6.2f} ms "
                f"p99={percentile(recent, 0.99) * 1e3:6.2f} ms",
                file=sys.stderr,
                flush=True,
            )
            last, last_t = done, now

    started = time.perf_counter()
    reporter = asyncio.create_task(progress())
    try:
        async with asyncio.TaskGroup() as tg:
            for _ in range(concurrency):
                tg.create_task(worker())
    finally:
        reporter.cancel()
    elapsed = time.perf_counter() - started
    await ml.close()
    ordered = sorted(latencies)
    return Result(
        entry_size=size,
        concurrency=concurrency,
        fsync=fsync,
        seconds=round(elapsed, 2),
        entries=done,
        entries_per_s=round(done / elapsed, 1),
        mb_per_s=round(done * size / elapsed / 1e6, 2),
        p50_ms=round(statistics.median(ordered) * 1e3, 3),
        p99_ms=round(percentile(ordered, 0.99) * 1e3, 3),
        p999_ms=round(percentile(ordered, 0.999) * 1e3, 3),
        max_ms=round(ordered[-1] * 1e3, 3),
    )


async def main_async(args: argparse.Namespace, base: Path) -> list[Result]:
    etcd = EtcdServer(data_dir=base / "etcd")
    etcd.start()
    bookies = [
        BookieProcess(data_dir=base / f"bookie-{i}", metadata_url=etcd.url, journal_sync=args.fsync)
        for i in range(3)
    ]
    try:
        for bookie in bookies:
            await bookie.astart()
        store = await open_store(etcd.url)
        bk = await BookKeeper.start(store, LedgerClientConfig())
        factory = ManagedLedgerFactory(store, bk)
        results = []
        try:
            for size in args.sizes:
                print(f"entry size {size} B, {args.concurrency} adds in flight", file=sys.stderr)
                results.append(
                    await run_size(factory, size, args.seconds, args.concurrency, args.fsync)
                )
        finally:
            await factory.close()
            await bk.close()
            await store.close()
        return results
    finally:
        for bookie in bookies:
            await bookie.astop()
        etcd.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", default="1024,65536", help="entry sizes in bytes, comma-separated"
    )
    parser.add_argument("--seconds", type=float, default=15.0, help="measured time per size")
    parser.add_argument("--concurrency", type=int, default=256, help="adds kept in flight")
    parser.add_argument(
        "--no-fsync", dest="fsync", action="store_false", help="journal without fdatasync"
    )
    parser.add_argument("--json", type=Path, help="write the results as JSON to this file")
    args = parser.parse_args()
    args.sizes = [int(s) for s in args.sizes.split(",")]
    settings = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
    print(header(settings), file=sys.stderr, flush=True)  # stdout carries only the JSON
    with tempfile.TemporaryDirectory(prefix="magnetar-bench-") as tmp:
        results = asyncio.run(main_async(args, Path(tmp)))
    report = {"machine": machine(), "settings": settings, "results": [asdict(r) for r in results]}
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
