"""Seeded producer workloads for the broker crash tests (holds no tests).

A :class:`Workload` is drawn from the test's ``random.Random``: how many messages, their payload
sizes and keys, and how the official client batches them. Message ``i`` carries ``i`` in its
first six bytes (:func:`index_of`), so a checker can tell order, loss and duplicates from the
payloads alone. :func:`send_all` sends a whole workload and waits for every receipt;
:class:`Sending` sends until the fault injector stops it, recording which sends were
acknowledged. All of it is blocking (the official client): call it from the test's thread.
"""

from __future__ import annotations

import functools
import random
import threading
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
