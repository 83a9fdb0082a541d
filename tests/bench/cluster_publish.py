"""Benchmark: publish throughput and lookups per second of a two-broker, three-bookie cluster,
against ``magnetar standalone`` in the same run.

Usage::

    python -m tests.bench.cluster_publish [--seconds 10] [--size 1024] [--producers 4]
        [--scenarios unbatched-1,batched-1] [--lookup-seconds 10] [--lookup-concurrency 32]
        [--producer-topics 100] [--targets cluster,standalone] [--json FILE]

Each target is started on loopback, measured, and stopped before the next one starts:

- **cluster**: a real etcd, three ``magnetar bookie`` processes (journal fdatasync on) and two
  ``magnetar broker`` processes whose managed ledgers are E3 Wq2 Aq2
  (``MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_*``); the clients get both brokers in their service
  URL, so lookups are answered by either one and redirected to the owner;
- **standalone**: one ``magnetar standalone`` (journal fdatasync on).

For each target:

- **publish**: each scenario of :mod:`tests.bench.broker_official_client` (the same producer
  processes of the official ``pulsar-client``, 1 KiB payloads by default, no consumer), at its
  maximum rate only. ``broker CPU`` sums the CPU of every broker process (100% = one core);
- **lookups/s**: binary LOOKUP requests through Magnetar's own client
  (``Client.lookup.lookup``, redirects followed) over 1,000 topic names, with
  ``--lookup-concurrency`` in flight for ``--lookup-seconds``; topics are not created;
- **producers/s**: the official client creates a producer on ``--producer-topics`` new topics,
  one after the other (PARTITIONED_METADATA, LOOKUP, then PRODUCER, which creates the topic's
  managed ledger and its first ledger on the bookies).

Prints the machine and the settings first, one line per measurement, then a table and one
``BENCH_JSON {...}`` line (also written to ``--json``). Not a test: figures go to
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tests.bench.broker_official_client import (
    Result,
    Target,
    add_load_arguments,
    official_client_missing,
    run_scenario,
)
from tests.bench.report import bench_json, header, machine
from tests.kit.cluster import Cluster
from tests.kit.standalone import StandaloneProcess

SCENARIOS = ("unbatched-1", "batched-1", "unbatched-8", "batched-8")
TARGETS = ("cluster", "standalone")
LOOKUP_TOPICS = 1000
CLUSTER_ENV = {
    "MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_ENSEMBLE_SIZE": "3",
    "MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_WRITE_QUORUM": "2",
    "MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_ACK_QUORUM": "2",
}


@dataclass(frozen=True)
class Lookups:
    target: str
    lookups: int
    lookup_s: float
    lookups_per_s: float
    producers: int
    producer_s: float
    producers_per_s: float


@contextlib.contextmanager
def cluster(base: Path) -> Iterator[Target]:
    """etcd, three bookies, two brokers (E3 Wq2 Aq2); stopped with SIGTERM."""
    members = Cluster(
        base, session_timeout_s=10.0, broker_env=CLUSTER_ENV, broker_log_level="warning"
    )
    with members.running() as running:
        yield Target(
            running.service_url,
            running.brokers[0].web_url,
            tuple(b.process.pid for b in running.brokers if b.process is not None),
        )


@contextlib.contextmanager
def standalone(base: Path) -> Iterator[Target]:
    sa = StandaloneProcess(data_dir=base / "data", journal_sync=True, log_level="warning")
    sa.start()
    try:
        yield Target.standalone(sa)
    finally:
        sa.stop()


async def lookup_rate(service_url: str, seconds: float, concurrency: int) -> tuple[int, float]:
    """Binary lookups done in ``seconds`` with ``concurrency`` in flight: (count, elapsed)."""
    from magnetar.client.client import Client

    topics = [f"persistent://public/default/lookup-{i}" for i in range(LOOKUP_TOPICS)]
    client = Client(service_url, operation_timeout_s=30)
    try:
        for topic in topics[:concurrency]:  # connections and bundle owners in place first
            await client.lookup.lookup(topic)
        done = 0
        end = time.monotonic() + seconds
        started = time.monotonic()

        async def worker(first: int) -> None:
            nonlocal done
            i = first
            while time.monotonic() < end:
                await client.lookup.lookup(topics[i % LOOKUP_TOPICS])
                done += 1
                i += concurrency

        await asyncio.gather(*(worker(i) for i in range(concurrency)))
        return done, time.monotonic() - started
    finally:
        await client.close()


def producer_rate(service_url: str, count: int) -> float:
    """Seconds the official client takes to create producers on ``count`` new topics."""
    import pulsar

    client = pulsar.Client(service_url, operation_timeout_seconds=30,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))  # fmt: skip
    run = uuid.uuid4().hex[:6]
    try:
        started = time.monotonic()
        for i in range(count):
            client.create_producer(f"persistent://public/default/new-{run}-{i}")
        return time.monotonic() - started
    finally:
        client.close()


def measure(name: str, target: Target, args: argparse.Namespace) -> tuple[list[Result], Lookups]:
    results = []
    for scenario in args.scenarios:
        result = run_scenario(target, scenario, args, 0.0, 0.0)
        results.append(result)
        print(f"  ^ {name}", flush=True)
    count, elapsed = asyncio.run(
        lookup_rate(target.service_url, args.lookup_seconds, args.lookup_concurrency)
    )
    created_s = producer_rate(target.service_url, args.producer_topics)
    lookups = Lookups(
        target=name,
        lookups=count,
        lookup_s=round(elapsed, 2),
        lookups_per_s=round(count / elapsed, 1),
        producers=args.producer_topics,
        producer_s=round(created_s, 2),
        producers_per_s=round(args.producer_topics / created_s, 1),
    )
    print(f"{name}: {lookups.lookups_per_s:,.0f} lookups/s, "
          f"{lookups.producers_per_s:,.1f} producers on new topics/s", flush=True)  # fmt: skip
    return results, lookups


def table(measured: dict[str, tuple[list[Result], Lookups]]) -> str:
    lines = [
        "| target | scenario | msg/s | MB/s | p50 publish | p99 publish | broker CPU |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, (results, _) in measured.items():
        for r in results:
            lines.append(
                f"| {name} | {r.scenario} | {r.publish_msg_s:,.0f} | {r.publish_mb_s:.2f} | "
                f"{r.p50_ms:.1f} ms | {r.p99_ms:.1f} ms | {r.broker_cpu_pct:.0f}% |"
            )
    lines += ["", "| target | lookups/s | producers on new topics/s |", "|---|---|---|"]
    for name, (_, lk) in measured.items():
        lines.append(f"| {name} | {lk.lookups_per_s:,.0f} | {lk.producers_per_s:,.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_load_arguments(parser)
    parser.add_argument("--scenarios", default="unbatched-1,batched-1",
                        help=f"comma-separated, of {','.join(SCENARIOS)}")  # fmt: skip
    parser.add_argument("--lookup-seconds", type=float, default=10.0)
    parser.add_argument("--lookup-concurrency", type=int, default=32)
    parser.add_argument("--producer-topics", type=int, default=100)
    parser.add_argument("--targets", default=",".join(TARGETS), help="cluster,standalone")
    args = parser.parse_args(argv)
    args.scenarios = [s for s in args.scenarios.split(",") if s]
    targets = [t for t in args.targets.split(",") if t]
    if set(args.scenarios) - set(SCENARIOS) or set(targets) - set(TARGETS):
        parser.error(f"scenarios are {SCENARIOS}, targets {TARGETS}")
    if official_client_missing():
        return 2
    args.client, args.consumer = "official", False  # what run_scenario reads besides the above
    settings: dict[str, Any] = {k: str(v) if isinstance(v, Path) else v
                                for k, v in vars(args).items()}  # fmt: skip
    print(header({**settings, "cluster": "etcd + 3 bookies + 2 brokers, E3 Wq2 Aq2"}))
    measured: dict[str, tuple[list[Result], Lookups]] = {}
    for name in targets:
        with tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as tmp:
            start = cluster if name == "cluster" else standalone
            with start(Path(tmp)) as target:
                measured[name] = measure(name, target, args)
    summary = {
        "benchmark": "cluster_publish",
        "settings": settings,
        "loadavg_at_end": os.getloadavg(),
        "machine": machine(),
        "results": {
            name: {"publish": [asdict(r) for r in results], "lookups": asdict(lookups)}
            for name, (results, lookups) in measured.items()
        },
    }
    print()
    print(table(measured))
    bench_json(summary, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
