"""Benchmark: how fast a replicator drains a backlog to a remote cluster.

Usage::

    python -m tests.bench.geo_replication [--unbatched 30000] [--batched 300000] [--size 100]

Two ``magnetar standalone`` processes (clusters ``a`` and ``b``, journal fdatasync on) are
linked and a namespace replicates between them with deduplication on. For each scenario, ``b``
is stopped, ``magnetar perf produce`` publishes the messages to ``a`` (unbatched: one message
per entry; batched: up to 1,000 per entry), ``b`` is started again, and the time from the
replication backlog's first move to zero is the drain time (the reconnection backoff before it
is left out). Prints one line per scenario: entries and messages per second. Not a test:
figures go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from pathlib import Path

import pulsar

from tests.kit.geo import cluster_name_args, link_clusters, replicated_namespace, topic_stats
from tests.kit.process import MAGNETAR_CLI
from tests.kit.standalone import StandaloneProcess


def backlog(a: StandaloneProcess, topic: str) -> int:
    value: int = topic_stats(a, topic)["replication"]["b"]["replicationBacklog"]
    return value


def drain(
    a: StandaloneProcess, b: StandaloneProcess, ns: str, label: str, n: int, size: int
) -> str:
    topic = f"persistent://{ns}/drain-{label}"
    client = pulsar.Client(b.service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    client.subscribe(topic, "keep").close()  # b keeps what arrives
    client.close()
    b.stop()
    batching = "--batching" if label == "batched" else "--no-batching"
    subprocess.run(
        [*MAGNETAR_CLI, "perf", "produce", topic, "-n", str(n), "--size", str(size), batching,
         "--service-url", a.service_url],
        capture_output=True, check=True,
    )  # fmt: skip
    entries = backlog(a, topic)
    b.start()
    while backlog(a, topic) >= entries:
        time.sleep(0.01)
    started = time.monotonic()
    while backlog(a, topic) > 0:
        time.sleep(0.01)
    took = time.monotonic() - started
    return (
        f"{label}: {n} messages in {entries} entries drained in {took:.2f} s: "
        f"{entries / took:,.0f} entries/s, {n / took:,.0f} msg/s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--unbatched", type=int, default=30_000)
    parser.add_argument("--batched", type=int, default=300_000)
    parser.add_argument("--size", type=int, default=100)
    args = parser.parse_args()
    print(f"cpus {os.cpu_count()}, load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="geo-bench-") as base:
        a, b = (
            StandaloneProcess(
                data_dir=Path(base) / n, journal_sync=True, extra_args=cluster_name_args(n)
            )
            for n in ("a", "b")
        )
        a.start()
        b.start()
        try:
            clusters = {"a": a, "b": b}
            link_clusters(clusters)
            ns = replicated_namespace(clusters)
            for label, n in (("unbatched", args.unbatched), ("batched", args.batched)):
                if n > 0:
                    print(drain(a, b, ns, label, n, args.size), flush=True)
        finally:
            a.stop()
            b.stop()


if __name__ == "__main__":
    main()
