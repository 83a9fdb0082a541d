"""Benchmark: how long a clean stop (SIGTERM to exit) of a loaded ``magnetar standalone`` or
``magnetar bookie`` takes, while the load is still running.

Usage::

    python -m tests.bench.stop_under_load [--target standalone|bookie]
        [--scenarios unbatched-1,batched-1] [--sizes 1024,16384] [--load-s 8] [--rounds 1]
        [--producers 4] [--client official|magnetar] [--journal-dir DIR] [--json FILE]

For each scenario, size and round: start the target (journal fdatasync on), start
``--producers`` producer processes publishing flat out (the same producers as
:mod:`tests.bench.broker_official_client`: batched or not, ``--pending`` sends in flight),
let them run ``--load-s`` seconds, then SIGTERM the target while they are still sending and
time the exit. ``standalone``: the standalone is the target and is restarted on the same data
dir for the next run (its start time is printed too: a start deletes what a stop left behind).
``bookie``: a cluster of etcd, three bookies and one broker (E=Wq=Aq=2); the target is a bookie
of the topic's ensemble, and the broker goes on writing to the others. The shutdown steps the
target logged (``shutdown_step_finished``, with their seconds) are printed beside the total;
the exit code must be 0. ``--journal-dir DIR`` puts each journal in a fresh dir of its own
under DIR (another volume, say) instead of under its data dir. Not a test: numbers go to
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from tests.bench.broker_official_client import (
    _child,
    magnetar_produce,
    official_client_missing,
    producer_main,
)
from tests.bench.load_window import CTX
from tests.bench.report import bench_json, header, machine
from tests.kit.process import ServerProcess
from tests.kit.standalone import StandaloneProcess

SCENARIOS = ("unbatched-1", "batched-1")
_FIELD = re.compile(r"(\w+)=(\S+)")  # key=value in a console log line


def _steps(log_text: str) -> dict[str, float]:
    """The shutdown steps a process logged in ``log_text`` (its last stop), in seconds (a step
    run twice, as an idempotent close in a ``finally``, counts both times)."""
    steps: dict[str, float] = {}
    for line in log_text.splitlines():
        if "shutdown_step_finished" not in line:
            continue
        fields = dict(_FIELD.findall(line))
        if "step" in fields and "seconds" in fields:
            steps[fields["step"]] = steps.get(fields["step"], 0.0) + float(fields["seconds"])
    return steps


def _start_load(service_url: str, scenario: str, size: int, args: argparse.Namespace) -> list[Any]:
    spec = {
        "service_url": service_url,
        "topic": f"persistent://public/default/stop-{scenario}-{uuid.uuid4().hex[:6]}",
        "size": size,
        "pending": args.pending,
        "batched": scenario.startswith("batched"),
        "client": args.client,
        "rate": 0.0,
    }
    window = CTX.Array("d", [0.0, 0.0], lock=False)
    out = CTX.Queue()
    producers = []
    for _ in range(args.producers):
        ready = CTX.Event()
        proc = _child(args.client, producer_main, magnetar_produce, (spec, ready, window, out))
        proc.start()
        producers.append((proc, ready))
    for _, ready in producers:
        if not ready.wait(60):
            raise TimeoutError("a producer did not connect")
    window[0] = time.monotonic()
    window[1] = window[0] + 3600  # until terminated
    return [proc for proc, _ in producers]


def _end_load(producers: list[Any]) -> None:
    for proc in producers:
        proc.terminate()
    for proc in producers:
        proc.join(timeout=10)
        if proc.is_alive():
            proc.kill()
            proc.join()


def _stamp(log_text: str, event: str) -> float | None:
    """The wall-clock time of the first ``event`` line in ``log_text`` (ISO stamp, UTC)."""
    for line in log_text.splitlines():
        if f" {event} " in f"{line} ":
            try:
                return datetime.fromisoformat(line.split()[0].replace("Z", "+00:00")).timestamp()
            except ValueError:
                return None
    return None


def _timed_stop(target: ServerProcess) -> tuple[float, int | None, dict[str, float]]:
    """SIGTERM ``target`` and time its exit; the steps it logged, plus ``react`` (signal to
    its first stopping line), ``steps`` (that line to its last stopped line) and ``exit``
    (that line to the exit)."""
    offset = len(target.log_text())
    signalled = time.time()
    stopping = time.monotonic()
    code = target.stop()
    stop_s = time.monotonic() - stopping
    exited = time.time()
    text = target.log_text()[offset:]
    if code != 0:
        print(text[-3000:], file=sys.stderr)
    steps = _steps(text)
    first = _stamp(text, "broker_stopping") or _stamp(text, "bookie_stopping")
    last = _stamp(text, "standalone_stopped") or _stamp(text, "bookie_stopped")
    if first is not None and last is not None:
        steps.update(react=first - signalled, steps=last - first, exit=exited - last)
    return stop_s, code, steps


def _report(run: dict[str, Any]) -> None:
    steps = " ".join(f"{k}={v:.2f}" for k, v in run["steps"].items() if v >= 0.01)
    print(
        f"{run['target']:<10} {run['scenario']:<12} {run['size']:>6} B  "
        f"load {run['load_s']:.0f} s  "
        f"stop {run['stop_s']:.2f} s (code {run['code']})  next start {run['start_s']:.2f} s  "
        f"[{steps}]",
        flush=True,
    )


def run_standalone(args: argparse.Namespace, base: Path) -> list[dict[str, Any]]:
    extra = ["--journal-dir", str(_journal_dir(args, "standalone"))] if args.journal_dir else []
    sa = StandaloneProcess(
        data_dir=base / "data", journal_sync=True, log_level="info", extra_args=extra
    )
    sa.start()
    try:
        return _stop_under_each_load(args, "standalone", sa.service_url, lambda: sa)
    finally:
        sa.stop()


def run_bookie(args: argparse.Namespace, base: Path) -> list[dict[str, Any]]:
    from tests.kit.cluster import Cluster

    cluster = Cluster(
        base,
        bookie_count=3,
        broker_count=1,
        journal_sync=True,
        broker_env={
            "MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_ENSEMBLE_SIZE": "2",
            "MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_WRITE_QUORUM": "2",
            "MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_ACK_QUORUM": "2",
        },
        broker_log_level="warning",
    )
    if args.journal_dir:
        for i, bookie in enumerate(cluster.bookies):
            bookie.extra_args += ["--journal-dir", str(_journal_dir(args, f"bookie-{i}"))]
    with cluster.running():
        return _stop_under_each_load(
            args, "bookie", cluster.service_url, lambda: _busiest(cluster.bookies)
        )


def _stop_under_each_load(
    args: argparse.Namespace, name: str, service_url: str, pick: Callable[[], Any]
) -> list[dict[str, Any]]:
    """For each case: load ``service_url``, SIGTERM the process ``pick()`` names while the load
    runs, time the stop, end the load, start the process again (timed too)."""
    runs: list[dict[str, Any]] = []
    for scenario, size in _cases(args):
        producers = _start_load(service_url, scenario, size, args)
        try:
            time.sleep(args.load_s)
            target = pick()
            stop_s, code, steps = _timed_stop(target)
        finally:
            _end_load(producers)
        starting = time.monotonic()
        target.start()
        run = {"target": name, "scenario": scenario, "size": size,
               "load_s": args.load_s, "stop_s": round(stop_s, 2), "code": code,
               "start_s": round(time.monotonic() - starting, 2), "steps": steps}  # fmt: skip
        _report(run)
        runs.append(run)
    return runs


def _journal_dir(args: argparse.Namespace, name: str) -> Path:
    return Path(args.journal_dir) / f"{name}-{uuid.uuid4().hex[:8]}"


def _busiest(bookies: list[Any]) -> Any:
    """The bookie whose journal dir grew most recently: one the load is writing to."""

    def newest(bookie: Any) -> float:
        stamps = [p.stat().st_mtime for p in bookie.data_dir.rglob("*.log") if p.is_file()]
        stamps += [p.stat().st_mtime for p in bookie.data_dir.rglob("*.txn") if p.is_file()]
        return max(stamps, default=0.0)

    return max(bookies, key=newest)


def _cases(args: argparse.Namespace) -> list[tuple[str, int]]:
    cases = []
    for _ in range(args.rounds):
        for scenario in args.scenarios.split(","):
            for size in args.sizes.split(","):
                cases.append((scenario, int(size)))
    return cases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", choices=("standalone", "bookie"), default="standalone")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--sizes", default="1024,16384", help="payload bytes, comma-separated")
    parser.add_argument("--load-s", type=float, default=8.0, help="load before the SIGTERM")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--producers", type=int, default=4, help="producer processes")
    parser.add_argument("--pending", type=int, default=1000, help="async sends per producer")
    parser.add_argument("--client", choices=("official", "magnetar"), default="official")
    parser.add_argument("--journal-dir", type=Path,
                        help="each journal in a fresh dir under this one")  # fmt: skip
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--keep", type=Path, help="keep the data dirs and logs here")
    args = parser.parse_args(argv)
    unknown = set(args.scenarios.split(",")) - set(SCENARIOS)
    if unknown:
        parser.error(f"unknown scenarios {sorted(unknown)}; choose from {SCENARIOS}")
    if args.client == "official" and official_client_missing():
        return 2
    print(header({k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}))
    run = run_standalone if args.target == "standalone" else run_bookie
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        runs = run(args, args.keep)
    else:
        with tempfile.TemporaryDirectory(prefix="bench-stop-") as tmp:
            runs = run(args, Path(tmp))
    bench_json(
        {
            "benchmark": "stop_under_load",
            "target": args.target,
            "journal_dir": str(args.journal_dir or ""),
            "loadavg_at_end": os.getloadavg(),
            "machine": machine(),
            "runs": runs,
        },
        args.json,
    )
    return 0 if all(r["code"] == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
