"""Benchmark: publish throughput and latency through ``magnetar proxy`` against the brokers
directly, in the same run and on the same cluster.

Usage::

    python -m tests.bench.proxy_publish [--seconds 8] [--size 1024] [--producers 2]
        [--scenarios unbatched-1,batched-1] [--rounds 1] [--rate R] [--journal-sync] [--json FILE]

One cluster on loopback: a real etcd, two ``magnetar bookie`` processes, two
``magnetar broker`` processes (managed ledgers E2 Wq2 Aq2) and one ``magnetar proxy``. Each
scenario of :mod:`tests.bench.broker_official_client` (producer processes of the official
``pulsar-client``, at their maximum rate, or paced at ``--rate`` msg/s in all when given, no
consumer) runs once with the brokers' own service URL (``direct``) and once with the proxy's
(``proxy``), alternating, ``--rounds`` times. At the maximum rate the latency is queueing
behind the sends in flight; a paced run below it shows what the extra hop adds. The
CPU column is the brokers' for ``direct`` and the proxy process's alone for ``proxy`` (100% =
one core): what relaying costs. The journal's fdatasync is off unless ``--journal-sync``, so
that the proxy's share of the latency is not hidden behind the disk.

Prints the machine and the settings first, one line per run, then a table and one
``BENCH_JSON {...}`` line (also written to ``--json``). Not a test: figures go to
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from dataclasses import asdict
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

SCENARIOS = ("unbatched-1", "batched-1", "unbatched-8", "batched-8")
ENV = {
    "MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_ENSEMBLE_SIZE": "2",
    "MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_WRITE_QUORUM": "2",
    "MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_ACK_QUORUM": "2",
}


def table(results: list[tuple[str, Result]]) -> str:
    lines = [
        "| path | scenario | run | msg/s | MB/s | p50 publish | p99 publish "
        "| CPU (brokers / proxy) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for path, r in results:
        run = "max" if r.mode == "max" else f"{r.target_msg_s:,.0f}/s"
        lines.append(
            f"| {path} | {r.scenario} | {run} | {r.publish_msg_s:,.0f} | {r.publish_mb_s:.2f} | "
            f"{r.p50_ms:.1f} ms | {r.p99_ms:.1f} ms | {r.broker_cpu_pct:.0f}% |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_load_arguments(parser)
    parser.set_defaults(seconds=8.0, producers=2)
    parser.add_argument("--scenarios", default="unbatched-1,batched-1",
                        help=f"comma-separated, of {','.join(SCENARIOS)}")  # fmt: skip
    parser.add_argument("--rounds", type=int, default=1, help="direct/proxy pairs per scenario")
    parser.add_argument("--journal-sync", action="store_true", help="bookies fdatasync")
    parser.add_argument("--rate", type=float, default=0.0, help="paced total msg/s (0: max)")
    args = parser.parse_args(argv)
    args.scenarios = [s for s in args.scenarios.split(",") if s]
    if set(args.scenarios) - set(SCENARIOS):
        parser.error(f"scenarios are {SCENARIOS}")
    if official_client_missing():
        return 2
    args.client, args.consumer = "official", False  # what run_scenario reads besides the above
    settings: dict[str, Any] = {k: str(v) if isinstance(v, Path) else v
                                for k, v in vars(args).items()}  # fmt: skip
    print(header({**settings, "cluster": "etcd + 2 bookies + 2 brokers (E2 Wq2 Aq2) + proxy"}))
    results: list[tuple[str, Result]] = []
    with tempfile.TemporaryDirectory(prefix="bench-proxy-") as tmp:
        members = Cluster(
            Path(tmp),
            bookie_count=2,
            session_timeout_s=10.0,
            journal_sync=args.journal_sync,
            broker_env=ENV,
            broker_log_level="warning",
            proxy=True,
            proxy_env={"MAGNETAR_PROXY_LOG_LEVEL": "warning"},
        )
        with members.running() as running:
            brokers = tuple(b.process.pid for b in running.brokers if b.process is not None)
            proxy = running.the_proxy
            proxy_pid = (proxy.process.pid,) if proxy.process is not None else ()
            paths = {
                "direct": Target(running.service_url, running.brokers[0].web_url, brokers),
                "proxy": Target(proxy.service_url, proxy.web_url, proxy_pid),
            }
            for _ in range(args.rounds):
                for scenario in args.scenarios:
                    for path, target in paths.items():
                        result = run_scenario(target, scenario, args, args.rate, 0.0)
                        results.append((path, result))
                        print(f"  ^ {path}", flush=True)
    summary = {
        "benchmark": "proxy_publish",
        "settings": settings,
        "loadavg_at_end": os.getloadavg(),
        "machine": machine(),
        "results": [{"path": path, **asdict(r)} for path, r in results],
    }
    print()
    print(table(results))
    bench_json(summary, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
