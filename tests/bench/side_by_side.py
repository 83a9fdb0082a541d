"""Benchmark: Magnetar against Redis Streams (fsync always) in one run, beside generator ceilings.

Redis Streams with ``appendfsync always`` is issue 17's durable peer; each figure stands beside
its load generator's own ceiling.

Usage::

    python -m tests.bench.side_by_side [--rounds 3] [--seconds 8] [--producers 4]
        [--scenarios unbatched,batched,batched-16k,paced] [--rate 5000]
        [--client official|magnetar] [--no-ceiling] [--no-redis-benchmark] [--json FILE]

The systems:

- **Magnetar**: one ``magnetar standalone`` (journal fdatasync on) for the whole run, loaded by
  the official pulsar-client (``--client magnetar``: Magnetar's cheaper asyncio client), exactly
  as ``broker_official_client`` loads it (its ``run_scenario``: producer processes,
  ``--pending`` sends in flight, pacing in 1 ms ticks).
- **Redis Streams**: a private ``redis-server`` (Debian's redis 7; ``make bench-setup``
  installs it) on a free loopback port with its own directory, ``appendonly yes`` and
  ``appendfsync always`` (durable before it answers), fresh for every run; loaded by
  ``redis_streams``'s generator with the same process model and spec (XADD per message;
  batched = pipelined XADDs of up to 1000 / 1 ms; a consumer process on XREAD BLOCK).
  ``redis-benchmark`` (50 connections, XADD) adds its own figure for the max scenarios.
- **Ceilings** (unless ``--no-ceiling``): the same scenario without a consumer against a sink
  that acknowledges without storing (``pulsar_sink``, on uvloop) for the Pulsar generator, and
  against a ``redis-server`` with ``appendonly no`` (in memory: still a server doing work, so a
  lower bound) for the Redis generator. At full speed that is the most the generator can send
  (``generator ceiling: N msg/s``); in the paced scenario, the latency the generator and the
  loopback alone add (``floor``).

The scenarios (1 KiB payloads unless named): ``unbatched`` and ``batched`` publish at max,
``batched-16k`` (16 KiB payloads) at max, all without a consumer; ``paced``: ``--rate`` msg/s in
total from the producers, unbatched, one consumer attached, reporting publish->ack and
publish->receive p50/p99 (payloads carry their send time). Rounds are interleaved: each round
runs every scenario against Magnetar, its sink, Redis and Redis in memory in turn, so both
systems see the same machine; the table gives the median over the rounds and the ratio
Magnetar / Redis (throughput: above 1 is Magnetar ahead; latency: the p99s' ratio, below 1 is
Magnetar ahead), the servers' and generators' CPU per message. Prints the machine and the
settings first, a line per run, the table, and one ``BENCH_JSON {...}`` line (also written to
``--json``). Not a test: numbers go to docs/benchmarks.md ("Side by side with Redis Streams").
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from tests.bench import redis_streams
from tests.bench.broker_official_client import (
    Result,
    Target,
    add_load_arguments,
    official_client_missing,
    print_result,
    run_scenario,
    window_result,
)
from tests.bench.load_window import CTX, process_cpu_s, run_window
from tests.bench.pulsar_sink import SinkProcess
from tests.bench.report import bench_json, header, machine
from tests.kit.redis_server import RedisServer, redis_binary
from tests.kit.standalone import StandaloneProcess

# The systems a run loads.
MAGNETAR, SINK, REDIS, REDIS_MEMORY = "magnetar", "pulsar-sink", "redis", "redis-memory"
BENCHMARK_PIPELINE = 100  # redis-benchmark -P for the batched scenarios (50 x 100 in flight)
GENERATOR_BOUND = 0.9  # a figure this close to its generator's ceiling: the generator limits


@dataclass(frozen=True)
class Scenario:
    name: str
    batched: bool
    size: int  # payload bytes; 0: --size (1 KiB by default)
    paced: bool  # at --rate with a consumer attached, else flat out without one


SCENARIOS = {
    s.name: s
    for s in (
        Scenario("unbatched", batched=False, size=0, paced=False),
        Scenario("batched", batched=True, size=0, paced=False),
        Scenario("batched-16k", batched=True, size=16 * 1024, paced=False),
        Scenario("paced", batched=False, size=0, paced=True),
    )
}


def run_pulsar(target: Target, scenario: Scenario, args: argparse.Namespace, *,
               ceiling: bool) -> Result:  # fmt: skip
    """The scenario through ``broker_official_client.run_scenario`` (the official client)."""
    consumer = scenario.paced and not ceiling
    load = argparse.Namespace(**{**vars(args), "size": scenario.size, "consumer": consumer,
                                 "stamp": consumer})  # fmt: skip
    rate = args.rate if scenario.paced else 0.0
    kind = "batched-1" if scenario.batched else "unbatched-1"
    label = f"{scenario.name} [{SINK if ceiling else MAGNETAR}]"
    print(f"-- {label}", flush=True)
    return replace(run_scenario(target, kind, load, rate, 0.0), scenario=scenario.name)


def run_redis(scenario: Scenario, args: argparse.Namespace, tmp: Path, *,
              durable: bool) -> tuple[Result, float]:  # fmt: skip
    """The scenario against a fresh ``redis-server`` (``appendfsync always`` when ``durable``,
    else in memory, without a consumer: the generator's ceiling). Returns the result and, for
    a durable max run, redis-benchmark's figure on another fresh server (0 otherwise)."""
    system = REDIS if durable else REDIS_MEMORY
    print(f"-- {scenario.name} [{system}]", flush=True)
    consumer = scenario.paced and durable
    rate = args.rate if scenario.paced else 0.0
    with fresh_redis(tmp, durable=durable) as server:
        spec = {"port": server.port, "key": f"bench-{scenario.name}", "size": scenario.size,
                "pending": args.pending, "batched": scenario.batched,
                "rate": rate / args.producers, "stamp": consumer}  # fmt: skip
        pid = server.process.pid if server.process else 0
        measured, cpu_start, cpu_end = run_window(
            _process(redis_streams.producer_main, spec),
            _process(redis_streams.consumer_main, spec) if consumer else None,
            producers=args.producers,
            warmup=args.warmup,
            seconds=args.seconds,
            probe=lambda: process_cpu_s(pid),
        )
    result = window_result(scenario.name, measured, rate=rate, size=scenario.size,
                           client=system, server_cpu_s=cpu_end - cpu_start)  # fmt: skip
    print_result(result)
    bench = 0.0
    if durable and not scenario.paced and args.redis_benchmark:
        # About half the window at our generator's rate: redis-benchmark has no time limit.
        requests = max(20_000, int(result.publish_msg_s * args.seconds / 2))
        pipeline = BENCHMARK_PIPELINE if scenario.batched else 1
        with fresh_redis(tmp, durable=True) as server:
            bench = redis_streams.redis_benchmark(
                server.port, size=scenario.size, requests=requests, pipeline=pipeline
            )
        print(f"{scenario.name:<12} redis-benchmark -c 50 -P {pipeline}: {bench:.0f} XADD/s")
    return result, bench


def _process(target: Callable[..., None], spec: dict[str, Any]) -> Callable[..., Any]:
    return lambda *child: CTX.Process(target=target, args=(spec, *child))


@contextmanager
def fresh_redis(tmp: Path, *, durable: bool) -> Iterator[RedisServer]:
    """A fresh private redis-server in a directory of its own, removed after (its log too)."""
    server = RedisServer(data_dir=tmp / f"redis-{uuid.uuid4().hex[:8]}", appendonly=durable)
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.data_dir, ignore_errors=True)
        server.log_path.unlink(missing_ok=True)


def settle(pid: int, *, busy: float = 0.05, step_s: float = 0.5, timeout_s: float = 20.0) -> None:
    """Wait until process ``pid`` (the standalone, up for the whole run) uses under ``busy`` of
    a core: its work left over from the last run (entry-log writeback, ledger trimming) must not
    take CPU and disk from the next run, Redis's least of all."""
    began = time.monotonic()
    before = process_cpu_s(pid)
    while time.monotonic() - began < timeout_s:
        time.sleep(step_s)
        now = process_cpu_s(pid)
        if now - before < busy * step_s:
            return
        before = now
    print(f"the standalone was still busy after {timeout_s:.0f} s; running anyway", flush=True)


# ---------------------------------------------------------------------- the table


@dataclass
class Runs:
    """Every round's results of one scenario, by system, and redis-benchmark's figures."""

    results: dict[str, list[Result]]
    benchmark: list[float]

    def as_json(self) -> dict[str, Any]:
        results = {system: [asdict(r) for r in rs] for system, rs in self.results.items()}
        return {"results": results, "redis_benchmark": self.benchmark}

    def median(self, system: str, field: str) -> float:
        values = [getattr(r, field) for r in self.results.get(system, [])]
        return statistics.median(values) if values else 0.0


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if a and b else "-"


def _rate(runs: Runs, system: str, scenario: Scenario) -> str:
    msg_s = runs.median(system, "publish_msg_s")
    if not msg_s:
        return "-"
    mb = f" = {runs.median(system, 'publish_mb_s'):.0f} MB/s" if scenario.size > 1024 else ""
    return f"{msg_s:,.0f} msg/s{mb}"


def _ceiling(runs: Runs, system: str, ceiling_system: str, scenario: Scenario) -> str:
    """``generator ceiling: N msg/s`` (max) or the floor latency (paced), and whether the
    figure beside it is the generator's limit rather than the server's."""
    if scenario.paced:
        p50, p99 = runs.median(ceiling_system, "p50_ms"), runs.median(ceiling_system, "p99_ms")
        return f"floor p50 {p50:.2f} / p99 {p99:.2f} ms" if p99 else "not measured"
    top = runs.median(ceiling_system, "publish_msg_s")
    if not top:
        return "not measured"
    share = runs.median(system, "publish_msg_s") / top
    limit = "; the generator is the limit" if share >= GENERATOR_BOUND else ""
    return f"generator ceiling: {top:,.0f} msg/s (the figure is {share:.0%} of it{limit})"


def table(scenarios: list[Scenario], runs: dict[str, Runs]) -> str:
    lines = [
        "| scenario | Magnetar | Redis Streams (fsync always) | Magnetar / Redis "
        "| redis-benchmark | server us/msg (Magnetar / Redis) "
        "| generator us/msg (Pulsar / Redis) | Pulsar generator | Redis generator |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for scenario in scenarios:
        r = runs[scenario.name]
        if scenario.paced:
            magnetar = (f"ack {r.median(MAGNETAR, 'p50_ms'):.2f} / "
                        f"{r.median(MAGNETAR, 'p99_ms'):.2f} ms, receive "
                        f"{r.median(MAGNETAR, 'e2e_p50_ms'):.2f} / "
                        f"{r.median(MAGNETAR, 'e2e_p99_ms'):.2f} ms")  # fmt: skip
            redis = (f"ack {r.median(REDIS, 'p50_ms'):.2f} / {r.median(REDIS, 'p99_ms'):.2f} ms, "
                     f"receive {r.median(REDIS, 'e2e_p50_ms'):.2f} / "
                     f"{r.median(REDIS, 'e2e_p99_ms'):.2f} ms")  # fmt: skip
            ratio = "p99 ack " + _ratio(r.median(MAGNETAR, "p99_ms"), r.median(REDIS, "p99_ms"))
            bench = "-"
        else:
            magnetar, redis = _rate(r, MAGNETAR, scenario), _rate(r, REDIS, scenario)
            ratio = _ratio(r.median(MAGNETAR, "publish_msg_s"), r.median(REDIS, "publish_msg_s"))
            bench = f"{statistics.median(r.benchmark):,.0f} msg/s" if r.benchmark else "-"
        lines.append(
            f"| {scenario.name} | {magnetar} | {redis} | {ratio} | {bench} "
            f"| {r.median(MAGNETAR, 'broker_us_per_msg'):.1f} / "
            f"{r.median(REDIS, 'broker_us_per_msg'):.1f} "
            f"| {r.median(MAGNETAR, 'generator_us_per_msg'):.1f} / "
            f"{r.median(REDIS, 'generator_us_per_msg'):.1f} "
            f"| {_ceiling(r, MAGNETAR, SINK, scenario)} "
            f"| {_ceiling(r, REDIS, REDIS_MEMORY, scenario)} |"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------------- main


def run_round(scenario: Scenario, args: argparse.Namespace, runs: Runs, sa: StandaloneProcess,
              sink: SinkProcess, tmp: Path) -> None:  # fmt: skip
    """One round of ``scenario``: Magnetar, the sink, Redis, Redis in memory, in turn, each
    after the standalone has gone quiet."""
    sa_pid = sa.process.pid if sa.process else 0
    got = runs.results
    settle(sa_pid)
    magnetar = run_pulsar(Target.standalone(sa), scenario, args, ceiling=False)
    got.setdefault(MAGNETAR, []).append(magnetar)
    if args.ceiling and sink.process is not None:
        settle(sa_pid)
        ceiling = run_pulsar(Target.sink(sink), scenario, args, ceiling=True)
        got.setdefault(SINK, []).append(ceiling)
        _say_ceiling(scenario, f"Magnetar ({args.client} client)", magnetar, ceiling)
    settle(sa_pid)
    redis, bench = run_redis(scenario, args, tmp, durable=True)
    got.setdefault(REDIS, []).append(redis)
    if bench:
        runs.benchmark.append(bench)
    if args.ceiling:
        settle(sa_pid)
        ceiling, _ = run_redis(scenario, args, tmp, durable=False)
        got.setdefault(REDIS_MEMORY, []).append(ceiling)
        _say_ceiling(scenario, "Redis", redis, ceiling)


def _say_ceiling(scenario: Scenario, system: str, result: Result, ceiling: Result) -> None:
    """The line that puts a run's figure beside its generator's ceiling (or floor, paced)."""
    if scenario.paced:
        print(f"{scenario.name:<12} {system}: publish p99 {result.p99_ms:.2f} ms, "
              f"generator floor p99 {ceiling.p99_ms:.2f} ms", flush=True)  # fmt: skip
        return
    share = result.publish_msg_s / ceiling.publish_msg_s if ceiling.publish_msg_s else 0.0
    print(f"{scenario.name:<12} {system}: {result.publish_msg_s:,.0f} msg/s, generator "
          f"ceiling: {ceiling.publish_msg_s:,.0f} msg/s ({share:.0%})", flush=True)  # fmt: skip


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_load_arguments(parser)
    parser.set_defaults(seconds=8.0)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (median)")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS),
                        help=f"comma-separated, of {', '.join(SCENARIOS)}")  # fmt: skip
    parser.add_argument("--rate", type=float, default=5000.0,
                        help="total msg/s of the paced scenario")  # fmt: skip
    parser.add_argument("--client", choices=("official", "magnetar"), default="official",
                        help="Pulsar generator: official pulsar-client or magnetar")  # fmt: skip
    parser.add_argument("--no-ceiling", dest="ceiling", action="store_false",
                        help="skip the generators' ceilings (sink, Redis in memory)")  # fmt: skip
    parser.add_argument("--no-redis-benchmark", dest="redis_benchmark", action="store_false",
                        help="skip redis-benchmark")  # fmt: skip
    args = parser.parse_args(argv)
    unknown = [s for s in args.scenarios.split(",") if s and s not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenarios {unknown}; choose from {', '.join(SCENARIOS)}")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if official_client_missing():
        return 2
    missing = [name for name in ("redis-server", "redis-benchmark") if not redis_binary(name)]
    if missing:
        print(f"{' and '.join(missing)} not installed: run `make bench-setup` (Debian packages "
              "redis-server and redis-tools)", file=sys.stderr)  # fmt: skip
        return 2
    scenarios = [replace(SCENARIOS[s], size=SCENARIOS[s].size or args.size)
                 for s in args.scenarios.split(",") if s]  # fmt: skip
    print(header({k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}))
    print(f"load generators: {args.client} client (Magnetar, sink); RESP on uvloop (Redis)")
    runs = {s.name: Runs({}, []) for s in scenarios}
    with tempfile.TemporaryDirectory(prefix="bench-side-by-side-") as name:
        tmp = Path(name)
        sa = StandaloneProcess(data_dir=tmp / "data", journal_sync=True, log_level="warning")
        sink = SinkProcess(data_dir=tmp / "sink")
        sa.start()
        if args.ceiling:
            sink.start()
        try:
            for round_ in range(1, args.rounds + 1):
                print(f"== round {round_} of {args.rounds}", flush=True)
                for scenario in scenarios:
                    run_round(scenario, args, runs[scenario.name], sa, sink, tmp)
        finally:
            stopping = time.monotonic()
            code = sa.stop()
            print(f"standalone stop: {time.monotonic() - stopping:.2f} s (code {code})")
            sink.stop()
    summary = {
        "benchmark": "side_by_side",
        "rounds": args.rounds,
        "seconds": args.seconds,
        "producers": args.producers,
        "pending": args.pending,
        "rate": args.rate,
        "journal_fsync": True,
        "client": args.client,
        "redis": "appendonly yes, appendfsync always",
        "loadavg_at_end": os.getloadavg(),
        "machine": machine(),
        "runs": {name: r.as_json() for name, r in runs.items()},
    }
    print()
    print(f"medians of {args.rounds} interleaved rounds; machine load average at the end "
          f"{os.getloadavg()[0]:.1f}")  # fmt: skip
    print(table(scenarios, runs))
    bench_json(summary, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
