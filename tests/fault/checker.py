"""The checker of the broker crash tests: read a subscription back after the crash and hold it
to what the producer was told (holds no tests).

Messages are known by the index :func:`tests.fault.workload.index_of` reads from them. The rules
(DESIGN §4): every acknowledged message comes back, in order, once; what comes back is a prefix
of what was sent (nothing unacknowledged is invented or reordered); acknowledgements persisted
before the crash still hold after it. Every receive has a deadline. Blocking (official client).

With several producers on a cluster (:class:`Subscriber` consumes from its own thread,
:func:`read_stored` reads back what is stored, by producer name) the rules per producer are:
every acknowledged message is consumed at least once (:func:`check_holds`), first occurrences
come in send order (:func:`check_in_order`: a resent or redelivered message may come again),
and with deduplication each is stored once (:func:`check_once`).
"""

from __future__ import annotations

import collections
import contextlib
import threading
import time

import pulsar

from tests.fault.workload import index_of
from tests.kit.standalone import receive_until_quiet

RECEIVE_MS = 10_000


def read_exactly(consumer: pulsar.Consumer, n: int, *, ack: bool = True) -> list[int]:
    """The indexes of the next ``n`` messages, each received within ``RECEIVE_MS``."""
    got = []
    for _ in range(n):
        msg = consumer.receive(timeout_millis=RECEIVE_MS)
        got.append(index_of(msg.data()))
        if ack:
            consumer.acknowledge(msg)
    return got


def read_until_quiet(consumer: pulsar.Consumer, wait_ms: int) -> list[int]:
    """The indexes of every message received until none arrives for ``wait_ms`` (none acked)."""
    return [index_of(msg.data()) for msg in receive_until_quiet(consumer, wait_ms)]


def check_all_in_order_once(got: list[int], sent: int, seed: int) -> None:
    """Exactly the ``sent`` messages, in send order, each once."""
    assert got == list(range(sent)), f"seed {seed}: {describe(got, sent)}"


def check_prefix_holding(got: list[int], acked: set[int], seed: int) -> None:
    """A prefix of what was sent, in order and once, holding every acknowledged message."""
    assert got == list(range(len(got))), f"seed {seed}: not a prefix: {describe(got, len(got))}"
    lost = sorted(acked - set(got))
    assert not lost, f"seed {seed}: {len(lost)} acknowledged messages lost, first {lost[:5]}"


def describe(got: list[int], sent: int) -> str:
    """Where ``got`` first departs from 0..sent-1, for failure messages."""
    for position, (have, want) in enumerate(zip(got, range(sent), strict=False)):
        if have != want:
            return f"at position {position} got index {have}, expected {want}"
    return f"got {len(got)} messages, expected {sent}"


class Subscriber:
    """A consumer on its own thread: receives (with a deadline each time), records the producer
    name and index of every message, acknowledges it, until :meth:`stop`."""

    def __init__(self, client: pulsar.Client, topic: str, subscription: str, kind: object) -> None:
        self.subscription = subscription
        self._consumer = client.subscribe(
            topic,
            subscription,
            consumer_type=kind,
            initial_position=pulsar.InitialPosition.Earliest,
            receiver_queue_size=500,
        )
        self._lock = threading.Lock()
        self._seen: dict[str, list[int]] = {}
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"sub-{subscription}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                msg = self._consumer.receive(timeout_millis=200)
            except pulsar.Timeout:
                continue
            except pulsar.PulsarException:
                continue  # the consumer reconnects on its own; keep receiving
            with self._lock:
                self._seen.setdefault(msg.producer_name(), []).append(index_of(msg.data()))
            # Not acknowledged: it comes back, which at-least-once allows.
            with contextlib.suppress(pulsar.PulsarException):
                self._consumer.acknowledge(msg)

    def seen(self) -> dict[str, list[int]]:
        with self._lock:
            return {name: list(got) for name, got in self._seen.items()}

    def wait_for(self, acked: dict[str, set[int]], timeout_s: float, seed: int) -> None:
        """Until every acknowledged message was received at least once (else fail, listing)."""
        deadline = time.monotonic() + timeout_s
        while True:
            seen = self.seen()
            missing = {n: sorted(a - set(seen.get(n, ()))) for n, a in acked.items()}
            missing = {n: m for n, m in missing.items() if m}
            if not missing:
                return
            assert time.monotonic() < deadline, (
                f"seed {seed}: {self.subscription} never received "
                + "; ".join(f"{n}: {len(m)}, first {m[:5]}" for n, m in missing.items())
            )
            time.sleep(0.1)

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=10)
        self._consumer.close()


def read_stored(
    client: pulsar.Client, topic: str, subscription: str, wait_ms: int = 2000
) -> dict[str, list[int]]:
    """Every message ``subscription`` holds, by producer name, in stored order (none acked).

    The subscription must exist from the start and never acknowledge: without retention,
    ledgers every cursor has passed are deleted, so a reader would find only the tail.
    """
    consumer = client.subscribe(topic, subscription, receiver_queue_size=1000)
    stored: dict[str, list[int]] = {}
    try:
        for msg in receive_until_quiet(consumer, wait_ms):
            stored.setdefault(msg.producer_name(), []).append(index_of(msg.data()))
    finally:
        consumer.close()
    return stored


def check_in_order(got: list[int], what: str, seed: int) -> None:
    """Per producer, the first time each index shows up is in send order (a redelivered or
    resent message may come again later, which at-least-once allows)."""
    first: list[int] = []
    known: set[int] = set()
    for i in got:
        if i not in known:
            known.add(i)
            first.append(i)
    assert first == sorted(first), f"seed {seed}: {what} out of order: {describe_order(first)}"


def check_once(got: list[int], what: str, seed: int) -> None:
    """Deduplication: each index at most once."""
    twice = sorted(i for i, n in collections.Counter(got).items() if n > 1)
    assert not twice, f"seed {seed}: {what} holds {len(twice)} twice, first {twice[:5]}"


def check_holds(got: list[int], acked: set[int], what: str, seed: int) -> None:
    lost = sorted(acked - set(got))
    assert not lost, f"seed {seed}: {what} lost {len(lost)} acknowledged, first {lost[:5]}"


def check_stored(stored: dict[str, list[int]], acked: dict[str, set[int]], seed: int) -> None:
    """Per producer: every acknowledged index is stored, and first seen in send order."""
    for name, indexes in acked.items():
        got = stored.get(name, [])
        check_holds(got, indexes, name, seed)
        check_in_order(got, name, seed)


def describe_order(first: list[int]) -> str:
    for position in range(1, len(first)):
        if first[position] < first[position - 1]:
            return f"index {first[position]} after {first[position - 1]} at {position}"
    return "in order"
