"""One measured window of load from separate processes: the process model every publish
benchmark in ``tests/bench`` shares, whatever system it loads (``broker_official_client`` for
Magnetar, ``redis_streams`` for Redis Streams, ``pulsar_sink`` for the generator's ceiling).

The parent starts an optional consumer process and ``producers`` producer processes, waits
until each says it is ready, then publishes the window (two CLOCK_MONOTONIC seconds in a
shared array: every process on the machine reads the same clock) ``warmup`` seconds ahead, and
samples the system under load (``probe``) when the window opens and when it closes. Each child
puts one tuple on the result queue when it is done:

- a producer: ``("producer", acknowledged_in_window, errors, latencies, cpu_seconds)``, the
  latencies (send to acknowledgement, seconds) as the bytes of an ``array("d")``;
- the consumer: ``("consumer", received_in_window, distinct_entries, latencies,
  cpu_seconds)``, the latencies (send to receipt, from a send time the producer stamped into the
  payload) empty when the run does not stamp payloads.

The helpers children share live here too: :class:`Pacer` (paced sending in 1 ms ticks),
:class:`WindowCpu` (a receive loop's CPU over the window), :func:`wait_window`, and the
producers' payload stamp (:func:`stamped`, :func:`stamp_of`). Not a test; no numbers here
(they go to docs/benchmarks.md).
"""

from __future__ import annotations

import multiprocessing
import os
import struct
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

CTX = multiprocessing.get_context("spawn")
PACER_TICK_S = 0.001
_STAMP = struct.Struct("<d")
P = TypeVar("P")

# A child process for the window: built from (ready event, window array, result queue).
ChildFactory = Callable[[Any, Any, Any], Any]


def process_cpu_s(pid: int, *, main_thread: bool = False) -> float:
    """User + system CPU seconds of process ``pid`` (all threads) so far; 0 if unknown.
    ``main_thread``: only its main thread's (the event loop's, in our servers)."""
    try:
        stat = Path(
            f"/proc/{pid}/task/{pid}/stat" if main_thread else f"/proc/{pid}/stat"
        ).read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Pacer:
    """Paced sending in 1 ms ticks: a producer sends what is due, then sleeps one tick. A
    timer per message cost the generator more CPU than the send itself, and took that CPU from
    the broker on a 2-core machine (docs/benchmarks.md, "How the broker benchmark works")."""

    def __init__(self, rate: float, begin: float) -> None:
        self.rate = rate
        self.begin = begin
        self.sent = 0

    def ahead(self, now: float) -> bool:
        """True: everything due by ``now`` was sent (sleep a tick); False: send one more."""
        if not self.rate:
            return False
        if self.sent >= (now - self.begin) * self.rate:
            return True
        self.sent += 1
        return False


class WindowCpu:
    """The consumer process's CPU seconds (all threads) over the measured window: read when
    the window opens and when it closes, by the receive loop (``tick`` per receive)."""

    def __init__(self, start: float, end: float) -> None:
        self.start, self.end = start, end
        self.at_start = self.at_end = -1.0

    def tick(self, now: float) -> None:
        if self.at_end >= 0 or now < self.start:
            return
        if self.at_start < 0:
            self.at_start = time.process_time()
        elif now >= self.end:
            self.at_end = time.process_time()

    @property
    def seconds(self) -> float:
        return max(0.0, self.at_end - self.at_start) if self.at_start >= 0 else 0.0


def wait_window(window: Any) -> tuple[float, float]:
    """Block until the parent publishes the measured window (CLOCK_MONOTONIC seconds)."""
    deadline = time.monotonic() + 120
    while window[1] == 0.0:
        if time.monotonic() > deadline:
            raise TimeoutError("no measurement window from the parent")
        time.sleep(0.01)
    return window[0], window[1]


def stamped(payload: bytes, sent: float) -> bytes:
    """``payload`` with its first 8 bytes replaced by the send time (CLOCK_MONOTONIC), which
    the consumer reads back with :func:`stamp_of` for the publish-to-receive latency."""
    return _STAMP.pack(sent) + payload[_STAMP.size :]


def stamp_of(payload: bytes | memoryview) -> float:
    """The send time :func:`stamped` put into ``payload``."""
    sent: float = _STAMP.unpack_from(payload)[0]
    return sent


@dataclass(frozen=True)
class Window:
    """What the load processes reported over one measured window."""

    seconds: float
    published: int  # acknowledged sends in the window, all producers
    errors: int
    latencies: list[float]  # send to acknowledgement (s), ascending
    consumed: int  # received in the window (0 without a consumer)
    entries: int  # distinct stored entries among them (0 when not known)
    e2e_latencies: list[float]  # send to receipt (s), ascending (empty: not stamped)
    producer_cpu_s: float  # all producer processes over the window
    consumer_cpu_s: float


def run_window(
    producer: ChildFactory,
    consumer: ChildFactory | None,
    *,
    producers: int,
    warmup: float,
    seconds: float,
    probe: Callable[[], P],
    hold_s: float = 0.0,
    on_hold: Callable[[], None] | None = None,
) -> tuple[Window, P, P]:
    """Run one window: the consumer (if any) first and subscribed, then the producers, then
    ``warmup + hold_s`` unmeasured seconds and ``seconds`` measured. Returns what the children
    reported and ``probe()`` as sampled when the window opened and when it closed."""
    window = CTX.Array("d", [0.0, 0.0], lock=False)
    out = CTX.Queue()
    children = []
    if consumer is not None:
        consumer_ready = CTX.Event()
        child = consumer(consumer_ready, window, out)
        child.start()
        children.append(child)
        if not consumer_ready.wait(60):
            raise TimeoutError("the consumer did not subscribe")
    readies = []
    for _ in range(producers):
        ready = CTX.Event()
        child = producer(ready, window, out)
        child.start()
        children.append(child)
        readies.append(ready)
    for ready in readies:
        if not ready.wait(60):
            raise TimeoutError("a producer did not connect")
    start = time.monotonic() + warmup + hold_s
    window[0] = start
    window[1] = start + seconds
    if hold_s and on_hold is not None:
        on_hold()
    time.sleep(max(0.0, start - time.monotonic()))
    at_start = probe()
    time.sleep(max(0.0, start + seconds - time.monotonic()))
    at_end = probe()
    published = errors = consumed = entries = 0
    producer_cpu = consumer_cpu = 0.0
    latencies = array("d")
    e2e = array("d")
    for _ in children:
        kind, count, errs, blob, cpu = out.get(timeout=warmup + hold_s + seconds + 120)
        if kind == "consumer":
            consumed, entries, consumer_cpu = count, errs, cpu
            e2e.frombytes(blob)
        else:
            producer_cpu += cpu
            published += count
            errors += errs
            latencies.frombytes(blob)
    for child in children:
        child.join(timeout=30)
    measured = Window(
        seconds=seconds,
        published=published,
        errors=errors,
        latencies=sorted(latencies),
        consumed=consumed,
        entries=entries,
        e2e_latencies=sorted(e2e),
        producer_cpu_s=producer_cpu,
        consumer_cpu_s=consumer_cpu,
    )
    return measured, at_start, at_end
