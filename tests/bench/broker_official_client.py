"""Benchmark: ``magnetar standalone`` (journal fsync on) driven by the official pulsar-client.

Usage::

    python -m tests.bench.broker_official_client [--seconds 10] [--size 1024] [--producers 4]
        [--scenarios unbatched-1,batched-1,unbatched-8,batched-8] [--no-half-rate]
        [--hold-s 0] [--json FILE]

Starts one standalone process on loopback (journal fdatasync on), then for each scenario
(batched or unbatched producers; one topic, or a topic of 8 partitions) runs:

- **max**: ``--producers`` threads, each with its own producer and up to ``--pending`` async
  sends in flight (``block_if_queue_full``), for ``--seconds``; one consumer thread receives
  and acknowledges everything (a Shared subscription created before producing). Reports publish
  throughput (acknowledged sends per second, MB/s of payload), publish latency p50/p99 (send
  call to receipt callback) and end-to-end throughput (messages received per second);
- **half**: the same at half the measured max rate (each producer paces its sends), reporting
  latency p50/p99 at a moderate load.

Prints one line per run, a table, and one ``BENCH_JSON {...}`` line (also written to ``--json``).
``--hold-s N`` keeps the load of the first scenario running N seconds longer and prints the
standalone's pid first, for a profiler (``py-spy record --pid PID``). Not a test: numbers go to
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tests.kit.standalone import StandaloneProcess

SCENARIOS = ("unbatched-1", "batched-1", "unbatched-8", "batched-8")


@dataclass(frozen=True)
class Result:
    scenario: str
    mode: str  # "max" or "half"
    target_msg_s: float  # 0 for max
    seconds: float
    published: int
    publish_msg_s: float
    publish_mb_s: float
    p50_ms: float
    p99_ms: float
    consumed: int
    e2e_msg_s: float
    errors: int


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def machine() -> dict[str, str | int]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count() or 0,
        "python": platform.python_version(),
        "kernel": platform.release(),
    }


def create_partitioned(sa: StandaloneProcess, topic: str, partitions: int) -> None:
    path = topic.removeprefix("persistent://")
    request = urllib.request.Request(
        f"{sa.web_url}/admin/v2/persistent/{path}/partitions",
        data=json.dumps(partitions).encode(),
        method="PUT",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10):
        pass


class Load:
    """Producer threads (optionally paced) and one consumer thread on one topic."""

    def __init__(self, pulsar: Any, client: Any, topic: str, args: argparse.Namespace,
                 batched: bool, rate: float) -> None:  # fmt: skip
        self.pulsar = pulsar
        self.client = client
        self.topic = topic
        self.args = args
        self.batched = batched
        self.rate = rate
        self.payload = os.urandom(args.size)
        self.lock = threading.Lock()
        self.latencies: list[float] = []
        self.published = 0
        self.errors = 0
        self.consumed = 0
        self.measuring = False
        self.stop = threading.Event()
        self.consumer = client.subscribe(
            topic, "bench", consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=5000
        )
        self.threads = [threading.Thread(target=self._consume, daemon=True)]
        self.threads += [
            threading.Thread(target=self._produce, args=(i,), daemon=True)
            for i in range(args.producers)
        ]

    def _producer(self) -> Any:
        return self.client.create_producer(
            self.topic,
            batching_enabled=self.batched,
            batching_max_messages=1000,
            batching_max_publish_delay_ms=1,
            max_pending_messages=self.args.pending,
            block_if_queue_full=True,
            message_routing_mode=self.pulsar.PartitionsRoutingMode.RoundRobinDistribution,
        )

    def _produce(self, index: int) -> None:
        producer = self._producer()
        per_thread = self.rate / self.args.producers if self.rate else 0.0
        next_at = time.perf_counter()

        def done(res: Any, _mid: Any, sent: float) -> None:
            now = time.perf_counter()
            with self.lock:
                if not self.measuring:
                    return
                if res == self.pulsar.Result.Ok:
                    self.published += 1
                    self.latencies.append(now - sent)
                else:
                    self.errors += 1

        while not self.stop.is_set():
            if per_thread:
                next_at += 1.0 / per_thread
                delay = next_at - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
            sent = time.perf_counter()
            producer.send_async(self.payload, lambda r, m, s=sent: done(r, m, s))
        producer.flush()
        producer.close()

    def _consume(self) -> None:
        while not self.stop.is_set():
            try:
                msg = self.consumer.receive(timeout_millis=200)
            except self.pulsar.Timeout:
                continue
            self.consumer.acknowledge(msg)
            if self.measuring:
                self.consumed += 1

    def run(self, scenario: str, mode: str, warmup_s: float, seconds: float, hold_s: float,
            pid: int) -> Result:  # fmt: skip
        for t in self.threads:
            t.start()
        time.sleep(warmup_s)
        if hold_s:
            print(f"profiling window: standalone pid {pid}, {hold_s:.0f} s", flush=True)
            time.sleep(hold_s)
        with self.lock:
            self.measuring = True
            self.latencies.clear()
        self.consumed = 0
        start = time.perf_counter()
        time.sleep(seconds)
        with self.lock:
            self.measuring = False
            elapsed = time.perf_counter() - start
            published, latencies, errors = self.published, list(self.latencies), self.errors
        consumed = self.consumed
        self.stop.set()
        for t in self.threads:
            t.join(timeout=30)
        self.consumer.close()
        return Result(
            scenario=scenario,
            mode=mode,
            target_msg_s=round(self.rate, 1),
            seconds=round(elapsed, 2),
            published=published,
            publish_msg_s=round(published / elapsed, 1),
            publish_mb_s=round(published * self.args.size / elapsed / 1e6, 2),
            p50_ms=round(_percentile(latencies, 0.50) * 1000, 2),
            p99_ms=round(_percentile(latencies, 0.99) * 1000, 2),
            consumed=consumed,
            e2e_msg_s=round(consumed / elapsed, 1),
            errors=errors,
        )


def run_scenario(pulsar: Any, sa: StandaloneProcess, scenario: str, args: argparse.Namespace,
                 rate: float, hold_s: float) -> Result:  # fmt: skip
    batched = scenario.startswith("batched")
    partitions = int(scenario.rsplit("-", 1)[1])
    topic = f"persistent://public/default/bench-{scenario}-{uuid.uuid4().hex[:6]}"
    if partitions > 1:
        create_partitioned(sa, topic, partitions)
    client = pulsar.Client(
        sa.service_url,
        operation_timeout_seconds=30,
        io_threads=2,
        logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error),
    )
    try:
        load = Load(pulsar, client, topic, args, batched, rate)
        result = load.run(scenario, "half" if rate else "max", args.warmup, args.seconds, hold_s,
                          sa.process.pid if sa.process else -1)  # fmt: skip
    finally:
        client.close()
    print(
        f"{result.scenario:<12} {result.mode:<4} {result.publish_msg_s:>9.0f} msg/s "
        f"{result.publish_mb_s:>6.2f} MB/s  p50 {result.p50_ms:>7.2f} ms  "
        f"p99 {result.p99_ms:>7.2f} ms  e2e {result.e2e_msg_s:>9.0f} msg/s"
        f"{f'  errors {result.errors}' if result.errors else ''}",
        flush=True,
    )
    return result


def table(results: list[Result]) -> str:
    head = "| scenario | run | msg/s | MB/s | p50 publish | p99 publish | e2e msg/s |"
    lines = [head, "|---|---|---|---|---|---|---|"]
    for r in results:
        run = "max" if r.mode == "max" else f"half ({r.target_msg_s:,.0f}/s)"
        lines.append(
            f"| {r.scenario} | {run} | {r.publish_msg_s:,.0f} | {r.publish_mb_s:.2f} | "
            f"{r.p50_ms:.1f} ms | {r.p99_ms:.1f} ms | {r.e2e_msg_s:,.0f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="measured time per run")
    parser.add_argument("--warmup", type=float, default=2.0, help="unmeasured time per run")
    parser.add_argument("--size", type=int, default=1024, help="payload bytes")
    parser.add_argument("--producers", type=int, default=4, help="producer threads")
    parser.add_argument("--pending", type=int, default=1000, help="async sends per producer")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--no-half-rate", action="store_true", help="skip the half-rate runs")
    parser.add_argument("--hold-s", type=float, default=0.0, help="extra load for a profiler")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    try:
        import pulsar
    except ImportError:
        print("pulsar-client is not installed", file=sys.stderr)
        return 2
    scenarios = [s for s in args.scenarios.split(",") if s]
    unknown = set(scenarios) - set(SCENARIOS)
    if unknown:
        parser.error(f"unknown scenarios {sorted(unknown)}; choose from {SCENARIOS}")
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="bench-broker-") as tmp:
        sa = StandaloneProcess(data_dir=Path(tmp) / "data", journal_sync=True, log_level="warning")
        sa.start()
        try:
            for i, scenario in enumerate(scenarios):
                hold = args.hold_s if i == 0 else 0.0
                top = run_scenario(pulsar, sa, scenario, args, 0.0, hold)
                results.append(top)
                if not args.no_half_rate and top.publish_msg_s > 0:
                    results.append(
                        run_scenario(pulsar, sa, scenario, args, top.publish_msg_s / 2, 0.0)
                    )
        finally:
            code = sa.stop()
            if code != 0:
                print(sa.log_text()[-3000:], file=sys.stderr)
    summary = {
        "benchmark": "broker_official_client",
        "size": args.size,
        "producers": args.producers,
        "pending": args.pending,
        "journal_fsync": True,
        "machine": machine(),
        "results": [asdict(r) for r in results],
    }
    print()
    print(table(results))
    print("BENCH_JSON " + json.dumps(summary), flush=True)
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
