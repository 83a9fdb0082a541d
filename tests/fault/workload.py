"""Seeded producer workloads for the broker crash tests (holds no tests).

A :class:`Workload` is drawn from the test's ``random.Random``: how many messages, their payload
sizes and keys, and how the official client batches them. Message ``i`` carries ``i`` in its
first six bytes (:func:`index_of`), so a checker can tell order, loss and duplicates from the
payloads alone. :func:`send_all` sends a whole workload and waits for every receipt;
:class:`Sending` sends until the fault injector stops it, recording which sends were
acknowledged; :class:`Publisher` does the same from its own thread at a steady rate, so that
several producers load a cluster while the test kills its members. All of it is blocking (the
official client): call it from the test's thread (a Publisher's thread sends).
"""

from __future__ import annotations

import functools
import random
import threading
import time
from dataclasses import dataclass

import pulsar

KEYS = ("k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7")


@dataclass(frozen=True)
class Workload:
    messages: int
    per_batch: int
    delay_ms: int
    pending: int
    sizes: tuple[int, ...]  # filler bytes after the index, per message (cycled)
    keys: tuple[str | None, ...]  # partition keys (cycled); None: no key

    @classmethod
    def draw(
        cls, rng: random.Random, *, messages: int, per_batch: tuple[int, int], pending: int
    ) -> Workload:
        return cls(
            messages=messages,
            per_batch=rng.randint(*per_batch),
            delay_ms=rng.randint(1, 10),
            pending=pending,
            sizes=tuple(rng.choice((0, 0, 8, 64, 400)) for _ in range(97)),
            keys=tuple(rng.choice((None, *KEYS)) for _ in range(89)),
        )

    def payload(self, i: int) -> bytes:
        return b"%06d|" % i + bytes([i % 251]) * self.sizes[i % len(self.sizes)]

    def key(self, i: int) -> str | None:
        return self.keys[i % len(self.keys)]

    def producer(self, client: pulsar.Client, topic: str) -> pulsar.Producer:
        """A batching producer that blocks (rather than fails) when ``pending`` sends queue."""
        return client.create_producer(
            topic,
            batching_enabled=True,
            batching_max_messages=self.per_batch,
            batching_max_publish_delay_ms=self.delay_ms,
            max_pending_messages=self.pending,
            block_if_queue_full=True,
        )

    def send(self, producer: pulsar.Producer, i: int, callback: object) -> None:
        key = self.key(i)
        if key is None:
            producer.send_async(self.payload(i), callback)
        else:
            producer.send_async(self.payload(i), callback, partition_key=key)


def index_of(data: bytes) -> int:
    """The index :meth:`Workload.payload` wrote into a message."""
    return int(data[:6])


def send_all(workload: Workload, client: pulsar.Client, topic: str) -> list[pulsar.Result]:
    """Send every message of ``workload`` and flush; the receipts' results in send order."""
    producer = workload.producer(client, topic)
    results: list[pulsar.Result | None] = [None] * workload.messages

    def on_receipt(i: int, result: pulsar.Result, _mid: pulsar.MessageId) -> None:
        results[i] = result

    for i in range(workload.messages):
        workload.send(producer, i, functools.partial(on_receipt, i))
    producer.flush()
    return [r for r in results if r is not None]


class Sending:
    """Sends ``workload``'s messages (indexes 0, 1, ...) until :meth:`acked_count` reaches the
    number given to :meth:`run`; receipts arrive on the client's threads."""

    def __init__(self, workload: Workload, client: pulsar.Client, topic: str) -> None:
        self._workload = workload
        self._producer = workload.producer(client, topic)
        self._lock = threading.Lock()
        self._acked: list[int] = []
        self.sent = 0

    def _on_receipt(self, i: int, result: pulsar.Result, _mid: pulsar.MessageId) -> None:
        if result == pulsar.Result.Ok:
            with self._lock:
                self._acked.append(i)

    def acked(self) -> set[int]:
        with self._lock:
            return set(self._acked)

    def acked_count(self) -> int:
        with self._lock:
            return len(self._acked)

    def run(self, until_acked: int) -> None:
        """Keep sending until ``until_acked`` sends are acknowledged (sends stay in flight)."""
        while self.acked_count() < until_acked:
            self._workload.send(
                self._producer, self.sent, functools.partial(self._on_receipt, self.sent)
            )
            self.sent += 1


class Publisher:
    """One named producer sending indexes 0, 1, ... from its own thread until :meth:`stop`.

    It records every acknowledged index with the receipt's ledger id and the time it arrived,
    so a test can tell which sends a crash cost and when the first one after it succeeded
    (:meth:`first_receipt_on_new_ledger`). Sends block when ``pending`` are queued, as a loaded
    application would; the send timeout is long enough to ride out a failover.
    """

    def __init__(
        self,
        client: pulsar.Client,
        topic: str,
        name: str,
        *,
        batched: bool,
        rng: random.Random,
        pending: int = 500,
        rate: float = 1000.0,
    ) -> None:
        self.name = name
        self.batched = batched
        self._workload = Workload.draw(rng, messages=0, per_batch=(5, 50), pending=pending)
        self._producer = client.create_producer(
            topic,
            producer_name=name,
            batching_enabled=batched,
            batching_max_messages=self._workload.per_batch,
            batching_max_publish_delay_ms=self._workload.delay_ms,
            max_pending_messages=pending,
            block_if_queue_full=True,
            send_timeout_millis=60_000,
        )
        self._lock = threading.Lock()
        self._acked: dict[int, tuple[int, float]] = {}  # index -> (ledger id, monotonic time)
        self._failed = 0
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"publisher-{name}", daemon=True)
        self._interval_s = 1.0 / rate
        self.sent = 0

    def start(self) -> None:
        self._thread.start()

    def _on_receipt(self, i: int, result: pulsar.Result, mid: pulsar.MessageId) -> None:
        now = time.monotonic()
        with self._lock:
            if result == pulsar.Result.Ok:
                self._acked[i] = (mid.ledger_id(), now)
            else:
                self._failed += 1

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._workload.send(
                self._producer, self.sent, functools.partial(self._on_receipt, self.sent)
            )
            self.sent += 1
            time.sleep(self._interval_s)  # a steady load, not a flood of the 2-core machine

    def stop(self) -> None:
        """Stop sending, then wait for every receipt (or its failure)."""
        self._stopping.set()
        self._thread.join(timeout=90)
        assert not self._thread.is_alive(), f"{self.name} is stuck in send"
        self._producer.flush()

    def acked(self) -> set[int]:
        with self._lock:
            return set(self._acked)

    def acked_count(self) -> int:
        with self._lock:
            return len(self._acked)

    def failed(self) -> int:
        with self._lock:
            return self._failed

    def ledgers(self) -> set[int]:
        with self._lock:
            return {ledger for ledger, _ in self._acked.values()}

    def first_receipt_on_new_ledger(self, old: set[int]) -> float | None:
        """When the first receipt from a ledger outside ``old`` arrived (monotonic), if any."""
        with self._lock:
            times = [t for ledger, t in self._acked.values() if ledger not in old]
        return min(times, default=None)

    def wait_acked(self, count: int, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while self.acked_count() < count:
            assert time.monotonic() < deadline, (
                f"{self.name}: {self.acked_count()}/{count} acknowledged after {timeout_s}s"
            )
            time.sleep(0.02)
