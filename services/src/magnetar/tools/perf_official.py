"""``magnetar perf --use-official-client``: the same load with the official ``pulsar-client``.

Mirrors :mod:`magnetar.tools.perf` (same :class:`~magnetar.tools.perf_config.PerfConfig`, same
stamped payloads, same meters and summary) so one broker can be measured with both clients in
one session and the numbers compared. ``pulsar`` is imported inside :func:`run_official` only:
this module loads without it, and a missing package is a clear
:class:`~magnetar.tools.errors.OfficialClientMissing`.

Concurrency: the official client is threaded. One thread per producer calls
``send_async(data, callback)`` (blocking while ``--max-pending`` are in flight); callbacks run
on the client's I/O thread; one thread per consumer calls ``receive(timeout_millis)``. Meters
are shared, so every meter call holds ``_lock``. The calling (main) thread prints a progress
line per second, turns Ctrl-C into the stop flag (a signal handler that only sets an Event),
and joins every thread before returning.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from magnetar.tools.errors import OfficialClientMissing, ToolError
from magnetar.tools.perf_config import (
    PerfConfig,
    PerfResult,
    e2e_latency_us,
    payload_template,
    stamp,
)
from magnetar.tools.perf_report import PerfMeter
from magnetar.tools.rate import RateSchedule

POLL_MS = 250
REPEAT_S = 1.0


def _import_pulsar() -> Any:
    try:
        import pulsar
    except ImportError as exc:
        raise OfficialClientMissing(
            "--use-official-client needs the pulsar-client package (pip install pulsar-client)"
        ) from exc
    return pulsar


class _OfficialRun:
    def __init__(
        self,
        pulsar: Any,
        config: PerfConfig,
        progress: Callable[[str], None],
        stop: threading.Event,
    ) -> None:
        self.pulsar = pulsar
        self.config = config
        self.progress = progress
        self.stop = stop
        self.producing_done = threading.Event()
        self.lock = threading.Lock()
        self.sent = 0
        self.received = 0
        self.meters: dict[str, PerfMeter] = {}
        self.begin()

    def begin(self) -> None:
        now = time.monotonic()
        self.meters = self.config.new_meters(now)
        self.last_arrival = now
        self.deadline = self.config.deadline(now)

    def over_time(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def _take_send_slot(self) -> bool:
        with self.lock:
            if self.config.count and self.sent >= self.config.count:
                return False
            self.sent += 1
            return True

    def produce_loop(self, producer: Any) -> None:
        rate = self.config.producer_rate()
        schedule = None if rate is None else RateSchedule(rate, time.monotonic())
        template = payload_template(self.config.size)
        meter, size, ok = self.meters["produce"], self.config.size, self.pulsar.Result.Ok
        lock = self.lock
        while not self.stop.is_set() and not self.over_time() and self._take_send_slot():
            if schedule is not None:
                delay = schedule.delay(time.monotonic())
                if delay > 0.001:
                    time.sleep(delay)
                schedule.sent()
            started = time.perf_counter_ns()

            def done(result: Any, _msg_id: Any, started: int = started) -> None:
                with lock:
                    if result == ok:
                        meter.record(size, (time.perf_counter_ns() - started) // 1000)
                    else:
                        meter.record_error()

            producer.send_async(stamp(template, time.time_ns() // 1000), done)

    def enough(self) -> bool:
        done = self.config.produces and self.producing_done.is_set()
        produced = self.meters["produce"].messages if done else None
        idle_s = time.monotonic() - self.last_arrival
        return self.config.consumed_enough(self.received, produced, idle_s)

    def consume_loop(self, consumer: Any) -> None:
        meter = self.meters["e2e" if self.config.mode == "e2e" else "consume"]
        while not self.stop.is_set() and not self.enough():
            if self.config.mode == "consume" and self.over_time():
                break
            try:
                message = consumer.receive(POLL_MS)
            except self.pulsar.Timeout:
                continue
            data = message.data()
            now_us = time.time_ns() // 1000
            latency = e2e_latency_us(data, message.publish_timestamp(), now_us)
            consumer.acknowledge(message)
            with self.lock:
                meter.record(len(data), latency)
                self.received += 1
                self.last_arrival = time.monotonic()

    def report(self) -> None:
        now = time.monotonic()
        with self.lock:
            lines = [m.interval(now).progress_line(m.messages) for m in self.meters.values()]
        for line in lines:
            self.progress(line)


def _options(pulsar: Any, config: PerfConfig) -> tuple[dict[str, Any], dict[str, Any]]:
    codecs = {
        "none": pulsar.CompressionType.NONE,
        "lz4": pulsar.CompressionType.LZ4,
        "zlib": pulsar.CompressionType.ZLib,
        "zstd": pulsar.CompressionType.ZSTD,
        "snappy": pulsar.CompressionType.SNAPPY,
    }
    kinds = {
        "exclusive": pulsar.ConsumerType.Exclusive,
        "shared": pulsar.ConsumerType.Shared,
        "failover": pulsar.ConsumerType.Failover,
        "key_shared": pulsar.ConsumerType.KeyShared,
    }
    producer = {
        "batching_enabled": config.batching,
        "batching_max_messages": config.batch_max_messages,
        "batching_max_publish_delay_ms": config.batch_delay_ms,
        "compression_type": codecs[config.compression],
        "max_pending_messages": config.max_pending,
        "block_if_queue_full": True,
    }
    consumer = {
        "consumer_type": kinds[config.effective_subscription_type],
        "initial_position": pulsar.InitialPosition.Latest,
        "receiver_queue_size": 1000,
    }
    return producer, consumer


def run_official(config: PerfConfig, progress: Callable[[str], None]) -> PerfResult:
    """Run ``config`` with the official client; Ctrl-C ends it early with a result."""
    pulsar = _import_pulsar()
    tls = config.tls
    tls_kwargs: dict[str, Any] = {}
    if tls is not None:
        tls_kwargs = {
            "tls_trust_certs_file_path": tls.trust_certs_file,
            "tls_allow_insecure_connection": tls.allow_insecure_connection,
            "tls_validate_hostname": tls.validate_hostname,
        }
        if tls.cert_file is not None:
            tls_kwargs["authentication"] = pulsar.AuthenticationTLS(tls.cert_file, tls.key_file)
    client = pulsar.Client(
        config.service_url,
        authentication=(
            None if config.auth_token is None else pulsar.AuthenticationToken(config.auth_token)
        ),
        operation_timeout_seconds=30,
        connection_timeout_ms=5000,
        logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error),
        **tls_kwargs,
    )
    # Ctrl-C sets the stop flag (a KeyboardInterrupt at an arbitrary bytecode could leave a
    # lock held that the client's I/O thread then waits on forever); another one a second
    # later interrupts.
    # Installed even when the shell ignored SIGINT (non-interactive shells do for background
    # jobs), as asyncio's handler in the other runner is.
    stop = threading.Event()
    first: list[float] = []

    def on_sigint(signum: int, frame: object) -> None:
        # A repeat within a second is the same Ctrl-C (``timeout`` sends it twice, say).
        if first and time.monotonic() - first[0] > REPEAT_S:
            raise KeyboardInterrupt
        first[:] = first or [time.monotonic()]
        stop.set()

    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, on_sigint) if in_main else None
    try:
        return _drive(pulsar, client, config, progress, stop)
    except pulsar.PulsarException as exc:
        raise ToolError(f"pulsar-client: {exc} (service URL {config.service_url})") from exc
    finally:
        if in_main:
            signal.signal(signal.SIGINT, previous)
        client.close()


def _drive(
    pulsar: Any,
    client: Any,
    config: PerfConfig,
    progress: Callable[[str], None],
    stop: threading.Event,
) -> PerfResult:
    run = _OfficialRun(pulsar, config, progress, stop)
    producer_options, consumer_options = _options(pulsar, config)
    subscription = config.consumer_subscription()
    topics = config.topic_names()
    consumers = [
        client.subscribe(topic, subscription, **consumer_options)
        for topic in topics
        for _ in range(config.consumers if config.consumes else 0)
    ]
    producers = [
        client.create_producer(topic, **producer_options)
        for topic in topics
        for _ in range(config.producers if config.produces else 0)
    ]
    run.begin()
    producing = [
        threading.Thread(target=run.produce_loop, args=(p,), daemon=True) for p in producers
    ]
    consuming = [
        threading.Thread(target=run.consume_loop, args=(c,), daemon=True) for c in consumers
    ]
    for thread in producing + consuming:
        thread.start()
    ends: dict[str, float] = {}
    _wait(run, producing)
    for producer in producers:
        producer.flush()
    ends["produce"] = time.monotonic()
    run.producing_done.set()
    _wait(run, consuming)
    run.stop.set()
    for thread in producing + consuming:
        thread.join(timeout=30.0)
    with run.lock:
        snapshots = {
            label: m.total(ends.get(label, time.monotonic())) for label, m in run.meters.items()
        }
    for consumer in consumers:
        if config.mode == "e2e":
            consumer.unsubscribe()
        else:
            consumer.close()
    for producer in producers:
        producer.close()
    return PerfResult("pulsar-client", config.mode, snapshots)


def _wait(run: _OfficialRun, threads: list[threading.Thread]) -> None:
    """Join ``threads`` (they end on the stop flag too), printing progress every second."""
    next_report = time.monotonic() + 1.0
    while any(t.is_alive() for t in threads):
        for thread in threads:
            thread.join(timeout=max(0.0, min(0.1, next_report - time.monotonic())))
        if time.monotonic() >= next_report:
            run.report()
            next_report += 1.0
