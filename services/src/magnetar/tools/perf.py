"""``magnetar perf`` with Magnetar's own asyncio client: produce, consume or end-to-end load.

Load. Each producer task sends ``--size``-byte stamped payloads, paced by a
:class:`~magnetar.tools.rate.Pacer` (``--rate`` split over the producers) or as fast as the
producer accepts them. Sends are pipelined: ``send_callback`` returns at once and only waits
while ``--max-pending`` messages are unacknowledged, so the pipe stays full. Produce latency is
send call to broker receipt: the receipt callback (one bound method, the send time as its
context: no future, closure or call_soon per message) records it; end-to-end latency
is the payload's stamp (or the publish time) to receive (:mod:`magnetar.tools.perf_config`).

Ending. A run ends at ``-n`` messages, after ``--time`` seconds, or on Ctrl-C (SIGINT sets the
stop event; another Ctrl-C a second later cancels). Producers then flush; an e2e run waits
until consumers have everything produced (or nothing arrived for a while:
:meth:`~magnetar.tools.perf_config.PerfConfig.consumed_enough`). A
progress line per meter goes to ``progress`` every second; the result holds the totals.

Concurrency: one event loop; every task here is owned by :func:`run_perf` and cancelled (and
awaited) before it returns. Meters are touched only from that loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Callable

from magnetar.cancellation import cancel_and_wait
from magnetar.client import (
    Client,
    ClientClosed,
    ClientError,
    Consumer,
    MultiTopicConsumer,
    PartitionedProducer,
    Producer,
    ReceiveTimeout,
)
from magnetar.protocol.message_id import MessageId
from magnetar.tools.perf_config import (
    PerfConfig,
    PerfResult,
    e2e_latency_us,
    payload_template,
    stamp,
)
from magnetar.tools.perf_report import PerfMeter
from magnetar.tools.rate import Pacer
from magnetar.tools.session import open_client

POLL_S = 0.25
REPEAT_S = 1.0

AnyProducer = Producer | PartitionedProducer
AnyConsumer = Consumer | MultiTopicConsumer


async def create_partitioned_topics(config: PerfConfig) -> None:
    """``--partitions N``: create each topic partitioned over the admin API (existing: kept)."""
    if config.partitions == 0:
        return
    from magnetar.client.admin import AdminClient  # httpx loads only when needed
    from magnetar.client.admin_errors import Conflict

    async with AdminClient(config.admin_url, timeout_s=30.0, tls=config.tls) as admin:
        for topic in config.topic_names():
            with contextlib.suppress(Conflict):
                await admin.create_partitioned_topic(topic, config.partitions)


class PerfRun:
    """The state of one run with our client; see the module docstring."""

    def __init__(self, config: PerfConfig, progress: Callable[[str], None]) -> None:
        self.config = config
        self.progress = progress
        self.stop = asyncio.Event()
        self.producing_done = asyncio.Event()
        self.sent = 0
        self.received = 0
        self.meters: dict[str, PerfMeter] = {}
        self.begin()

    def begin(self) -> None:
        """Start the clocks (once producers and consumers are attached)."""
        now = time.monotonic()
        self.meters = self.config.new_meters(now)
        self._size = self.config.size
        self._produce_meter = self.meters.get("produce") or PerfMeter("produce", now)
        self._last_arrival = now
        self._deadline = self.config.deadline(now)

    def _over_time(self) -> bool:
        return self._deadline is not None and time.monotonic() >= self._deadline

    # ------------------------------------------------------------------ producing

    def _on_receipt(self, started_ns: object, result: MessageId | BaseException) -> None:
        if isinstance(result, BaseException):
            self._produce_meter.record_error()
        else:
            latency_us = (time.perf_counter_ns() - started_ns) // 1000  # type: ignore[operator]
            self._produce_meter.record(self._size, latency_us)

    async def produce_loop(self, producer: AnyProducer) -> None:
        config = self.config
        rate = config.producer_rate()
        pacer = Pacer(rate) if rate is not None else None  # no await per message at max rate
        template = payload_template(config.size)
        on_receipt = self._on_receipt
        send = producer.send_callback
        perf_ns, time_ns = time.perf_counter_ns, time.time_ns
        while not self.stop.is_set() and not self._over_time():
            if config.count and self.sent >= config.count:
                break
            if pacer is not None:
                await pacer.wait()
            try:
                await send(stamp(template, time_ns() // 1000), on_receipt, perf_ns())
            except ClientClosed:
                break
            except ClientError:
                self._produce_meter.record_error()
                continue
            self.sent += 1

    # ------------------------------------------------------------------ consuming

    def _enough(self) -> bool:
        produced = self._produce_meter.messages if self.producing_done.is_set() else None
        idle_s = time.monotonic() - self._last_arrival
        return self.config.consumed_enough(self.received, produced, idle_s)

    async def consume_loop(self, consumer: AnyConsumer) -> None:
        meter = self.meters["e2e" if self.config.mode == "e2e" else "consume"]
        while not self.stop.is_set() and not self._enough():
            if self.config.mode == "consume" and self._over_time():
                break
            # What is queued at once (one clock read, one acknowledge call), but never more
            # than --count still wants.
            wanted = self.config.count - self.received if self.config.count else None
            try:
                batch = await consumer.batch_receive(wanted, POLL_S)
            except ReceiveTimeout:
                continue
            now_us = time.time_ns() // 1000
            record = meter.record
            for message in batch:
                data = message.data
                record(len(data), e2e_latency_us(data, message.publish_time_ms, now_us))
            consumer.acknowledge(batch)
            self.received += len(batch)
            self._last_arrival = time.monotonic()

    # ------------------------------------------------------------------ reporting

    async def report_loop(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            now = time.monotonic()
            for meter in self.meters.values():
                self.progress(meter.interval(now).progress_line(meter.messages))

    def result(self, ends: dict[str, float]) -> PerfResult:
        snapshots = {
            label: m.total(ends.get(label, time.monotonic())) for label, m in self.meters.items()
        }
        return PerfResult("magnetar", self.config.mode, snapshots)


async def _open_producers(client: Client, config: PerfConfig) -> list[AnyProducer]:
    return [
        await client.create_producer(
            topic,
            batching_enabled=config.batching,
            batching_max_messages=config.batch_max_messages,
            batching_max_publish_delay_ms=config.batch_delay_ms,
            compression_type=config.compression,
            max_pending_messages=config.max_pending,
            block_if_queue_full=True,
        )
        for topic in config.topic_names()
        for _ in range(config.producers)
    ]


async def _open_consumers(
    client: Client, config: PerfConfig, subscription: str
) -> list[AnyConsumer]:
    return [
        await client.subscribe(
            topic,
            subscription,
            subscription_type=config.effective_subscription_type,
            initial_position="latest",
            receiver_queue_size=1000,
        )
        for topic in config.topic_names()
        for _ in range(config.consumers)
    ]


async def run_perf(config: PerfConfig, progress: Callable[[str], None]) -> PerfResult:
    """Run the load described by ``config``; Ctrl-C ends it early with a result."""
    await create_partitioned_topics(config)
    run = PerfRun(config, progress)
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()

    first: list[float] = []

    def on_sigint() -> None:
        # A repeat within a second is the same Ctrl-C (``timeout`` sends it twice, say).
        if first and time.monotonic() - first[0] > REPEAT_S and main is not None:
            main.cancel()
        first[:] = first or [time.monotonic()]
        run.stop.set()

    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    try:
        async with open_client(
            config.service_url, config.topic_names()[0], tls=config.tls
        ) as client:
            return await _drive(run, client)
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGINT)


async def _drive(run: PerfRun, client: Client) -> PerfResult:
    config = run.config
    consumers: list[AnyConsumer] = []
    if config.consumes:
        consumers = await _open_consumers(client, config, config.consumer_subscription())
    producers = await _open_producers(client, config) if config.produces else []
    run.begin()
    reporter = asyncio.create_task(run.report_loop(), name="perf-report")
    consuming = [asyncio.create_task(run.consume_loop(c), name="perf-consume") for c in consumers]
    ends: dict[str, float] = {}
    try:
        if producers:
            await asyncio.gather(*(run.produce_loop(p) for p in producers))
            flushes = asyncio.gather(*(p.flush() for p in producers))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(flushes, timeout=30.0)
            ends["produce"] = time.monotonic()
            run.producing_done.set()
        if consuming:
            await asyncio.gather(*consuming)
        return run.result(ends)
    finally:
        for task in consuming:
            await cancel_and_wait(task)
        await cancel_and_wait(reporter)
        if config.mode == "e2e":
            for consumer in consumers:
                with contextlib.suppress(ClientError):
                    await consumer.unsubscribe()
