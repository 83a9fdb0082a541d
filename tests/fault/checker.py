"""The checker of the broker crash tests: read a subscription back after the crash and hold it
to what the producer was told (holds no tests).

Messages are known by the index :func:`tests.fault.workload.index_of` reads from them. The rules
(DESIGN §4): every acknowledged message comes back, in order, once; what comes back is a prefix
of what was sent (nothing unacknowledged is invented or reordered); acknowledgements persisted
before the crash still hold after it. Every receive has a deadline. Blocking (official client).
"""

from __future__ import annotations

import pulsar

from tests.fault.workload import index_of

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
    got = []
    while True:
        try:
            got.append(index_of(consumer.receive(timeout_millis=wait_ms).data()))
        except pulsar.Timeout:
            return got


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
