"""Benchmark: ``magnetar standalone`` (journal fsync on) driven by the official pulsar-client
(default) or by Magnetar's own asyncio client (``--client magnetar``).

Usage::

    python -m tests.bench.broker_official_client [--seconds 10] [--size 1024] [--producers 4]
        [--scenarios unbatched-1,batched-1,unbatched-8,batched-8] [--no-half-rate]
        [--hold-s 0] [--rate MSG_S] [--json FILE] [--client official|magnetar]
        [--journal-dir DIR] [--sink]

Starts one standalone process on loopback (journal fdatasync on), then for each scenario
(batched or unbatched producers; one topic, or a topic of 8 partitions) runs:

- **max**: ``--producers`` producer *processes*, each with its own client and producer and up to
  ``--pending`` async sends in flight (``block_if_queue_full``), for ``--seconds``; one consumer
  process receives and acknowledges everything (a Shared subscription created before
  producing). Reports publish throughput (acknowledged sends per second, MB/s of payload),
  publish latency p50/p99/p99.9 (send call to receipt callback) and end-to-end throughput (messages
  received per second);
- **half**: the same at half the measured max rate (each producer paces its sends), reporting
  latency p50/p99 at a moderate load.

Producers and the consumer are separate processes so the load generator is not one Python
process serialised on its GIL (with threads it was: its callbacks queued behind each other and
the broker idled). The window is measured in CLOCK_MONOTONIC, which every process shares
(the process model and the children's helpers live in :mod:`tests.bench.load_window`, shared
with ``side_by_side``).
The consumer counts the distinct entries (ledger, entry) it received in the window, which gives
the messages per stored entry (``msgs/entry``): the batch size the broker really stored. The
standalone's CPU over the window (``/proc``) gives ``broker CPU`` (100% = one core) and its CPU
microseconds per published message, steadier than throughput on a shared machine; ``(loop
...)`` is the share of its main thread, the event loop (the rest: the bookie's journal and
entry-log threads, executors). ``loop lag p99 <=`` and ``journal sync p99 <=`` are read from
the standalone's ``/metrics`` before and after the window (``magnetar_event_loop_lag_seconds``,
``bookie_journal_sync_latency_seconds``): the histogram bucket edge under which 99 % of the
window's event-loop lags and journal group syncs fell, to set beside the publish p99. With
``MAGNETAR_STANDALONE_JOURNAL_STAGE_METRICS=true`` in the environment the standalone exports
the journal's per-group stages too, printed as bucket edges at p50 / p99: queue wait (first
add's hand-off -> the group's write), sync, apply (to ledger storage), hand-back (the writer's
post -> the loop's delivery).

Both load generators follow the same spec: batched producers batch up to 1000 messages, 1 ms,
128 KiB; ``--pending`` sends in flight; paced or flat out; every acknowledged send's latency is
recorded (an array append in the receipt callback). ``--client magnetar`` runs each producer
(and the consumer) as one asyncio process with :mod:`magnetar.client` (``send_callback``: no
future per send), which costs less CPU per message than the official client's wrapper.

Prints the machine and the settings, which client generated the load, one line per run, how
long the standalone took to stop (SIGTERM to exit) after the last run, a table, and one
``BENCH_JSON {...}`` line (also written to ``--json``).
``--hold-s N`` keeps the load of the first scenario running N seconds longer and prints the
standalone's pid first, for a profiler (``py-spy record --pid PID``); ``--rate N`` runs only
paced runs at N msg/s in total (to profile a moderate load). ``--sink`` loads
:mod:`tests.bench.pulsar_sink` instead (no consumer): ``producers us/msg`` is then the load
generator's own CPU per message, and the rate its ceiling (with ``--producers 1`` and
``--client magnetar``: what one producer of Magnetar's client costs). Not a test: numbers go
to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import urllib.request
import uuid
from array import array
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tests.bench.load_window import (
    CTX,
    PACER_TICK_S,
    Pacer,
    Window,
    WindowCpu,
    process_cpu_s,
    run_window,
    stamp_of,
    stamped,
    wait_window,
)
from tests.bench.pulsar_sink import SinkProcess
from tests.bench.report import bench_json, header, machine, percentile
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
    msgs_per_entry: float
    broker_cpu_pct: float  # the server processes' CPU over the window (100 = one core)
    broker_us_per_msg: float  # its CPU microseconds per published message
    generator_us_per_msg: float = 0.0  # the producer processes' CPU microseconds per message
    broker_loop_us_per_msg: float = 0.0  # of broker_us_per_msg: the main (event-loop) threads
    # Bucket edges (ms) under which 99 % of the window's event-loop lags and journal syncs fell,
    # from the target's /metrics histograms (0: not exported there, or none in the window).
    loop_lag_p99_ms: float = 0.0
    journal_sync_p99_ms: float = 0.0
    consumer_us_per_msg: float = 0.0  # the consumer process's CPU microseconds per received msg
    client: str = "official"  # which client generated the load
    # Send to receipt by the consumer (ms), when the producers stamp their payloads
    # (``spec["stamp"]``: the side-by-side benchmark's paced run); 0 otherwise.
    e2e_p50_ms: float = 0.0
    e2e_p99_ms: float = 0.0
    p999_ms: float = 0.0  # publish latency p99.9 (the tail that p99 hides at paced rates)


@dataclass(frozen=True)
class Target:
    """Where a run publishes: the service and admin URLs, and the server processes whose CPU
    the run measures (one standalone here; the brokers of a cluster in ``cluster_publish``)."""

    service_url: str
    web_url: str
    pids: tuple[int, ...]

    @classmethod
    def standalone(cls, sa: StandaloneProcess) -> Target:
        return cls(sa.service_url, sa.web_url, (sa.process.pid,) if sa.process else ())

    @classmethod
    def sink(cls, sink: SinkProcess) -> Target:
        """The Pulsar sink (no admin API): the load generator's ceiling."""
        return cls(sink.service_url, "", (sink.process.pid,) if sink.process else ())

    def cpu_s(self) -> float:
        return sum(process_cpu_s(pid) for pid in self.pids)

    def loop_cpu_s(self) -> float:
        """The servers' main threads only: their event loops (the rest is the journal's,
        the entry logs' and the executors' threads)."""
        return sum(process_cpu_s(pid, main_thread=True) for pid in self.pids)


LOOP_LAG = "magnetar_event_loop_lag_seconds"
JOURNAL_SYNC = "bookie_journal_sync_latency_seconds"
# Exported only when the standalone runs with MAGNETAR_STANDALONE_JOURNAL_STAGE_METRICS=true.
JOURNAL_STAGES = {
    "queue wait": "bookie_journal_queue_wait_seconds",
    "sync": JOURNAL_SYNC,
    "apply": "bookie_journal_apply_latency_seconds",
    "hand-back": "bookie_journal_handback_latency_seconds",
}
Buckets = dict[str, dict[float, float]]


def histogram_buckets(target: Target) -> Buckets:
    """The cumulative bucket counts of the loop-lag and journal-sync histograms on the
    target's ``/metrics`` (by metric, by upper edge in seconds); empty if it does not answer."""
    from prometheus_client.parser import text_string_to_metric_families

    if not target.web_url:  # a target without an admin port (the benchmark's sink)
        return {}
    try:
        with urllib.request.urlopen(f"{target.web_url}/metrics", timeout=5) as response:
            text = response.read().decode()
    except OSError:
        return {}
    found: Buckets = {}
    for family in text_string_to_metric_families(text):
        if family.name in (LOOP_LAG, JOURNAL_SYNC) or family.name in JOURNAL_STAGES.values():
            for sample in family.samples:
                if sample.name.endswith("_bucket"):
                    found.setdefault(family.name, {})[float(sample.labels["le"])] = sample.value
    return found


def p99_edge_ms(before: Buckets, after: Buckets, name: str, q: float = 0.99) -> float:
    """The bucket edge (ms) under which ``q`` (99 %) of ``name``'s observations between the
    two scrapes fell (inf: above the last edge); 0 when there were none."""
    end, start = after.get(name, {}), before.get(name, {})
    edges = sorted(end)
    counts = [end[edge] - start.get(edge, 0.0) for edge in edges]
    if not counts or counts[-1] <= 0:
        return 0.0
    within = (edge for edge, count in zip(edges, counts, strict=True) if count >= q * counts[-1])
    return next(within) * 1000


def journal_stages_line(before: Buckets, after: Buckets) -> str | None:
    """The journal's per-group stages as bucket edges (ms) at p50 / p99, when exported."""
    if JOURNAL_STAGES["queue wait"] not in after:
        return None
    return "journal stages (bucket edges, ms, p50 / p99): " + ", ".join(
        f"{stage} {p99_edge_ms(before, after, name, 0.5):g} / {p99_edge_ms(before, after, name):g}"
        for stage, name in JOURNAL_STAGES.items()
    )


def _admin(target: Target, method: str, path: str, body: Any = None) -> Any:
    request = urllib.request.Request(
        f"{target.web_url}/admin/v2/persistent/{path}",
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        text = response.read()
    return json.loads(text) if text else None


def create_partitioned(target: Target, topic: str, partitions: int) -> None:
    _admin(target, "PUT", f"{topic.removeprefix('persistent://')}/partitions", partitions)


# ---------------------------------------------------------------------- child processes


def _client(pulsar: Any, spec: dict[str, Any]) -> Any:
    return pulsar.Client(spec["service_url"], operation_timeout_seconds=30, io_threads=1,
                         logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))  # fmt: skip


def producer_main(spec: dict[str, Any], ready: Any, window: Any, out: Any) -> None:
    """One client and one producer, paced at ``spec['rate']`` (0: flat out) until the end."""
    import pulsar
    from pulsar import _pulsar

    client = _client(pulsar, spec)
    producer = client.create_producer(
        spec["topic"],
        batching_enabled=spec["batched"],
        batching_max_messages=1000,
        batching_max_publish_delay_ms=1,
        max_pending_messages=spec["pending"],
        block_if_queue_full=True,
        message_routing_mode=pulsar.PartitionsRoutingMode.RoundRobinDistribution,
    )
    payload = os.urandom(spec["size"])
    done: list[tuple[float, float]] = []
    errors = [0]
    ok = pulsar.Result.Ok

    def callback(res: Any, _mid: Any, sent: float) -> None:
        if res == ok:
            now = time.monotonic()
            done.append((now, now - sent))
        else:
            errors[0] += 1

    # The C++ producer and message builder directly: the wrapper's per-message argument checks
    # and schema encoding cost the load generator more CPU than the broker spends per message.
    send = producer._producer.send_async
    build = _pulsar.MessageBuilder
    stamp = spec.get("stamp", False)
    ready.set()
    start, end = wait_window(window)
    pacer = Pacer(spec["rate"], time.monotonic())
    cpu_start = -1.0  # the process's CPU seconds when the window opened
    while (now := time.monotonic()) < end:
        if cpu_start < 0 and now >= start:
            cpu_start = time.process_time()
        if pacer.ahead(now):
            time.sleep(PACER_TICK_S)
            continue
        sent = time.monotonic()
        content = stamped(payload, sent) if stamp else payload
        send(build().content(content).build(), lambda r, m, s=sent: callback(r, m, s))
    cpu = time.process_time() - cpu_start
    producer.flush()
    latencies = array("d", (lat for at, lat in list(done) if start <= at < end))
    out.put(("producer", len(latencies), errors[0], latencies.tobytes(), cpu))
    producer.close()
    client.close()


def consumer_main(spec: dict[str, Any], ready: Any, window: Any, out: Any) -> None:
    """The Shared subscription's one consumer: receives and acknowledges everything."""
    import pulsar

    client = _client(pulsar, spec)
    consumer = client.subscribe(
        spec["topic"], "bench", consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=5000
    )
    stamp = spec.get("stamp", False)
    ready.set()
    start, end = wait_window(window)
    consumed = 0
    entries: set[tuple[int, int, int]] = set()
    e2e = array("d")
    cpu = WindowCpu(start, end)
    while (now := time.monotonic()) < end + 0.5:
        cpu.tick(now)
        try:
            msg = consumer.receive(timeout_millis=200)
        except pulsar.Timeout:
            continue
        consumer.acknowledge(msg)
        if start <= now < end:
            consumed += 1
            mid = msg.message_id()
            entries.add((mid.partition(), mid.ledger_id(), mid.entry_id()))
            if stamp:
                e2e.append(time.monotonic() - stamp_of(msg.data()))
    out.put(("consumer", consumed, len(entries), e2e.tobytes(), cpu.seconds))
    consumer.close()
    client.close()


def magnetar_main(body: Any, spec: dict[str, Any], ready: Any, window: Any, out: Any) -> None:
    """A magnetar.client child process: one asyncio loop and one client, for ``body``
    (``magnetar_produce``: ``producer_main``'s work; ``magnetar_consume``: ``consumer_main``'s)."""
    import asyncio

    from magnetar.client.client import Client
    from magnetar.telemetry import configure_logging

    async def run() -> None:
        client = Client(spec["service_url"], operation_timeout_s=30)
        try:
            await body(client, spec, ready, window, out)
        finally:
            await client.close()

    configure_logging("error")
    asyncio.run(run())


async def magnetar_produce(
    client: Any, spec: dict[str, Any], ready: Any, window: Any, out: Any
) -> None:
    """One producer, paced at ``spec['rate']`` (0: flat out) until the end."""
    import asyncio

    producer = await client.create_producer(
        spec["topic"],
        batching_enabled=spec["batched"],
        batching_max_messages=1000,
        batching_max_bytes=128 * 1024,
        batching_max_publish_delay_ms=1,
        max_pending_messages=spec["pending"],
        block_if_queue_full=True,
    )
    payload = os.urandom(spec["size"])
    done_at = array("d")
    latency = array("d")
    errors = [0]
    clock = time.monotonic

    def on_receipt(sent: object, result: object) -> None:
        # One bound function for every send; the send time travels as the context.
        if isinstance(result, BaseException):
            errors[0] += 1
            return
        now = clock()
        done_at.append(now)
        latency.append(now - sent)  # type: ignore[operator]

    send = producer.send_callback
    stamp = spec.get("stamp", False)
    ready.set()
    start, end = await asyncio.to_thread(wait_window, window)
    pacer = Pacer(spec["rate"], clock())
    cpu_start = -1.0  # the process's CPU seconds when the window opened
    while (now := clock()) < end:
        if cpu_start < 0 and now >= start:
            cpu_start = time.process_time()
        if pacer.ahead(now):
            await asyncio.sleep(PACER_TICK_S)
            continue
        sent = clock()
        await send(stamped(payload, sent) if stamp else payload, on_receipt, sent)
    cpu = time.process_time() - cpu_start
    await producer.flush()
    kept = array("d", (lat for at, lat in zip(done_at, latency, strict=True) if start <= at < end))
    out.put(("producer", len(kept), errors[0], kept.tobytes(), cpu))


async def magnetar_consume(
    client: Any, spec: dict[str, Any], ready: Any, window: Any, out: Any
) -> None:
    """The Shared subscription's one consumer: receives and acknowledges everything."""
    import asyncio

    from magnetar.client.errors import ReceiveTimeout

    consumer = await client.subscribe(
        spec["topic"], "bench", subscription_type="Shared", receiver_queue_size=5000
    )
    stamp = spec.get("stamp", False)
    ready.set()
    start, end = await asyncio.to_thread(wait_window, window)
    consumed = 0
    entries: set[tuple[int, int, int]] = set()
    e2e = array("d")
    cpu = WindowCpu(start, end)
    while (now := time.monotonic()) < end + 0.5:
        cpu.tick(now)
        # Everything queued at once (at least one message), acknowledged as one list: no
        # receive (and no timer) per message.
        try:
            batch = await consumer.batch_receive(timeout_s=0.2)
        except ReceiveTimeout:
            continue
        consumer.acknowledge(batch)
        if start <= now < end:
            consumed += len(batch)
            entries.update({(m.message_id.partition, m.message_id.ledger_id,
                             m.message_id.entry_id) for m in batch})  # fmt: skip
            if stamp:
                received = time.monotonic()
                e2e.extend(received - stamp_of(m.data) for m in batch)
    out.put(("consumer", consumed, len(entries), e2e.tobytes(), cpu.seconds))


# ---------------------------------------------------------------------- parent


def _child(client: str, official: Any, magnetar: Any, args: tuple[Any, ...]) -> Any:
    """A load-generator process: ``official(*args)``, or ``magnetar`` in :func:`magnetar_main`."""
    if client == "magnetar":
        return CTX.Process(target=magnetar_main, args=(magnetar, *args))
    return CTX.Process(target=official, args=args)


def run_scenario(target: Target, scenario: str, args: argparse.Namespace, rate: float,
                 hold_s: float) -> Result:  # fmt: skip
    batched = scenario.startswith("batched")
    partitions = int(scenario.rsplit("-", 1)[1])
    topic = f"persistent://public/default/bench-{scenario}-{uuid.uuid4().hex[:6]}"
    if partitions > 1:
        create_partitioned(target, topic, partitions)
    spec = {"service_url": target.service_url, "topic": topic, "size": args.size,
            "pending": args.pending, "batched": batched, "client": args.client,
            "rate": rate / args.producers if rate else 0.0,
            # payloads carry their send time for the consumer (side_by_side's paced run)
            "stamp": getattr(args, "stamp", False)}  # fmt: skip
    # The first HTTP request a process serves (any path: a lazy start-up of the web stack)
    # holds its loop for about a quarter of a second (246-281 ms measured, a /metrics scrape
    # about 3 ms after it): take it now, not inside the window.
    histogram_buckets(target)

    def probe() -> tuple[float, float, Buckets]:
        return target.cpu_s(), target.loop_cpu_s(), histogram_buckets(target)

    def hold() -> None:
        print(f"profiling window: server pids {list(target.pids)}, "
              f"{hold_s:.0f} s", flush=True)  # fmt: skip

    def consumer(*child: Any) -> Any:
        return _child(args.client, consumer_main, magnetar_consume, (spec, *child))

    def producer(*child: Any) -> Any:
        return _child(args.client, producer_main, magnetar_produce, (spec, *child))

    measured, at_start, at_end = run_window(
        producer,
        consumer if args.consumer else None,
        producers=args.producers,
        warmup=args.warmup,
        seconds=args.seconds,
        probe=probe,
        hold_s=hold_s,
        on_hold=hold,
    )
    (cpu_start, loop_start, buckets_start), (cpu_end, loop_end, buckets_end) = at_start, at_end
    result = window_result(
        scenario,
        measured,
        rate=rate,
        size=args.size,
        client=args.client,
        server_cpu_s=cpu_end - cpu_start,
        loop_cpu_s=loop_end - loop_start,
        loop_lag_p99_ms=p99_edge_ms(buckets_start, buckets_end, LOOP_LAG),
        journal_sync_p99_ms=p99_edge_ms(buckets_start, buckets_end, JOURNAL_SYNC),
    )
    print_result(result)
    stages = journal_stages_line(buckets_start, buckets_end)
    if stages:
        print(f"  {stages}", flush=True)
    return result


def window_result(
    scenario: str,
    measured: Window,
    *,
    rate: float,
    size: int,
    client: str,
    server_cpu_s: float,
    loop_cpu_s: float = 0.0,
    loop_lag_p99_ms: float = 0.0,
    journal_sync_p99_ms: float = 0.0,
) -> Result:
    """One run's :class:`Result` from what its load processes reported and the server's CPU
    over the window (the broker's, or the peer's in ``side_by_side``)."""
    elapsed = measured.seconds
    published, consumed, entries = measured.published, measured.consumed, measured.entries

    def per_msg(cpu_s: float, count: int) -> float:
        return round(cpu_s / count * 1e6, 1) if count else 0.0

    def ms(values: list[float], q: float) -> float:
        return round(percentile(values, q) * 1000, 2)

    return Result(
        scenario=scenario,
        mode="half" if rate else "max",
        target_msg_s=round(rate, 1),
        seconds=round(elapsed, 2),
        published=published,
        publish_msg_s=round(published / elapsed, 1),
        publish_mb_s=round(published * size / elapsed / 1e6, 2),
        p50_ms=ms(measured.latencies, 0.50),
        p99_ms=ms(measured.latencies, 0.99),
        consumed=consumed,
        e2e_msg_s=round(consumed / elapsed, 1),
        errors=measured.errors,
        msgs_per_entry=round(consumed / entries, 1) if entries else 0.0,
        broker_cpu_pct=round(100 * server_cpu_s / elapsed, 1),
        broker_us_per_msg=per_msg(server_cpu_s, published),
        generator_us_per_msg=per_msg(measured.producer_cpu_s, published),
        broker_loop_us_per_msg=per_msg(loop_cpu_s, published),
        loop_lag_p99_ms=loop_lag_p99_ms,
        journal_sync_p99_ms=journal_sync_p99_ms,
        consumer_us_per_msg=per_msg(measured.consumer_cpu_s, consumed),
        client=client,
        e2e_p50_ms=ms(measured.e2e_latencies, 0.50),
        e2e_p99_ms=ms(measured.e2e_latencies, 0.99),
        p999_ms=ms(measured.latencies, 0.999),
    )


def print_result(result: Result) -> None:
    """One run's line, as the run ends."""
    receive = ""
    if result.e2e_p99_ms:
        receive = f"  receive p50 {result.e2e_p50_ms:.2f} ms p99 {result.e2e_p99_ms:.2f} ms"
    print(
        f"{result.scenario:<12} {result.mode:<4} {result.publish_msg_s:>9.0f} msg/s "
        f"{result.publish_mb_s:>6.2f} MB/s  p50 {result.p50_ms:>7.2f} ms  "
        f"p99 {result.p99_ms:>7.2f} ms  p99.9 {result.p999_ms:>7.2f} ms  "
        f"e2e {result.e2e_msg_s:>9.0f} msg/s  "
        f"msgs/entry {result.msgs_per_entry:>5.1f}  broker {result.broker_cpu_pct:>3.0f}% CPU "
        f"{result.broker_us_per_msg:>6.1f} us/msg (loop {result.broker_loop_us_per_msg:.1f})  "
        f"producers {result.generator_us_per_msg:.1f} us/msg  "
        f"consumer {result.consumer_us_per_msg:.1f} us/msg  "
        f"loop lag p99 <= {result.loop_lag_p99_ms:g} ms  "
        f"journal sync p99 <= {result.journal_sync_p99_ms:g} ms"
        f"{receive}"
        f"{f'  errors {result.errors}' if result.errors else ''}",
        flush=True,
    )


def table(results: list[Result]) -> str:
    head = (
        "| scenario | run | msg/s | MB/s | p50 publish | p99 publish | p99.9 publish | e2e msg/s "
        "| msgs/entry "
        "| broker CPU | broker us/msg | producers us/msg | consumer us/msg |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        run = "max" if r.mode == "max" else f"half ({r.target_msg_s:,.0f}/s)"
        lines.append(
            f"| {r.scenario} | {run} | {r.publish_msg_s:,.0f} | {r.publish_mb_s:.2f} | "
            f"{r.p50_ms:.1f} ms | {r.p99_ms:.1f} ms | {r.p999_ms:.1f} ms | {r.e2e_msg_s:,.0f} "
            f"| {r.msgs_per_entry:.1f} "
            f"| {r.broker_cpu_pct:.0f}% | {r.broker_us_per_msg:.1f} "
            f"| {r.generator_us_per_msg:.1f} | {r.consumer_us_per_msg:.1f} |"
        )
    return "\n".join(lines)


def add_load_arguments(parser: argparse.ArgumentParser) -> None:
    """The load options :func:`run_scenario` reads, shared with the cluster benchmark."""
    parser.add_argument("--seconds", type=float, default=10.0, help="measured time per run")
    parser.add_argument("--warmup", type=float, default=2.0, help="unmeasured time per run")
    parser.add_argument("--size", type=int, default=1024, help="payload bytes")
    parser.add_argument("--producers", type=int, default=4, help="producer processes")
    parser.add_argument("--pending", type=int, default=1000, help="async sends per producer")
    parser.add_argument("--json", type=Path, help="also write the results here")


def official_client_missing() -> bool:
    """Whether ``pulsar-client`` cannot be imported (said on stderr); the child processes use
    it, so a benchmark checks it once before it starts anything."""
    try:
        import pulsar  # noqa: F401
    except ImportError:
        print("pulsar-client is not installed", file=sys.stderr)
        return True
    return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_load_arguments(parser)
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--no-half-rate", action="store_true", help="skip the half-rate runs")
    parser.add_argument("--hold-s", type=float, default=0.0, help="extra load for a profiler")
    parser.add_argument("--rate", type=float, default=0.0,
                        help="only paced runs at this total msg/s (no max run)")  # fmt: skip
    parser.add_argument("--no-consumer", dest="consumer", action="store_false",
                        help="publish only: no subscription (e2e is not measured)")  # fmt: skip
    parser.add_argument("--client", choices=("official", "magnetar"), default="official",
                        help="load generator: official pulsar-client or magnetar")  # fmt: skip
    parser.add_argument("--journal-dir", type=Path,
                        help="the standalone's journal in a fresh dir under this one (its own "
                             "volume, say); default: under its data dir")  # fmt: skip
    parser.add_argument("--sink", action="store_true",
                        help="load tests.bench.pulsar_sink instead of a standalone (no "
                             "consumer): the load generator's own cost and ceiling")  # fmt: skip
    args = parser.parse_args(argv)
    if args.sink:
        args.consumer = False  # the sink delivers nothing
    if args.client == "official" and official_client_missing():
        return 2
    print(header({k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}))
    print(f"load generator: {args.client} client", flush=True)
    scenarios = [s for s in args.scenarios.split(",") if s]
    unknown = set(scenarios) - set(SCENARIOS)
    if unknown:
        parser.error(f"unknown scenarios {sorted(unknown)}; choose from {SCENARIOS}")
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="bench-broker-") as tmp:
        journal = []
        if args.journal_dir:
            journal = ["--journal-dir", str(args.journal_dir / uuid.uuid4().hex)]
        sa: StandaloneProcess | SinkProcess
        if args.sink:
            sa = SinkProcess(data_dir=Path(tmp) / "sink")
            sa.start()
            target = Target.sink(sa)
        else:
            sa = StandaloneProcess(data_dir=Path(tmp) / "data", journal_sync=True,
                                   log_level="warning", extra_args=journal)  # fmt: skip
            sa.start()
            target = Target.standalone(sa)
        try:
            for i, scenario in enumerate(scenarios):
                hold = args.hold_s if i == 0 else 0.0
                if args.rate:
                    results.append(run_scenario(target, scenario, args, args.rate, hold))
                    continue
                top = run_scenario(target, scenario, args, 0.0, hold)
                results.append(top)
                if not args.no_half_rate and top.publish_msg_s > 0:
                    results.append(run_scenario(target, scenario, args, top.publish_msg_s / 2, 0.0))
        finally:
            # SIGTERM to exit, after the last run: a stop that waits on work it need not do
            # (issue 17: seconds in the bookie's close after batched runs) shows here.
            stopping = time.monotonic()
            code = sa.stop()
            stop_s = time.monotonic() - stopping
            print(f"{'sink' if args.sink else 'standalone'} stop: {stop_s:.2f} s (SIGTERM to exit, "
                  f"code {code})", flush=True)  # fmt: skip
            if code != 0:
                print(sa.log_text()[-3000:], file=sys.stderr)
    summary = {
        "benchmark": "broker_official_client",
        "size": args.size,
        "producers": args.producers,
        "pending": args.pending,
        "journal_fsync": True,
        "client": args.client,
        "load_generator": f"{args.client} client, one process per producer, one consumer process",
        "loadavg_at_end": os.getloadavg(),
        "stop_s": round(stop_s, 2),
        "machine": machine(),
        "results": [asdict(r) for r in results],
    }
    print()
    print(f"load generator: {args.client} client")
    print(table(results))
    bench_json(summary, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
