"""The publish path when a topic's managed ledger is full of pending adds.

With ``managed_ledger_max_pending_adds=2`` nearly every SEND takes the broker's slow path (the
add waits for room) instead of the task-free one; receipts must still come back in SEND order
and every message must be stored once, in order, across ledger rollovers. A producer whose
connection drops with sends in flight must not disturb the topic for the next one.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pulsar
import pytest

from tests.kit.process import running
from tests.kit.standalone import StandaloneProcess, official_client, topic_name

N = 600


@pytest.fixture(scope="module")
def tight(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneProcess]:
    sa = StandaloneProcess(
        data_dir=tmp_path_factory.mktemp("tight") / "data",
        env={
            "MAGNETAR_STANDALONE_MANAGED_LEDGER_MAX_PENDING_ADDS": "2",
            "MAGNETAR_STANDALONE_MANAGED_LEDGER_MIN_LEDGER_ROLLOVER_TIME_MINUTES": "0",
            "MAGNETAR_STANDALONE_MANAGED_LEDGER_MAX_ENTRIES_PER_LEDGER": "50",
        },
    )
    with running(sa) as process:
        yield process


def send_all(producer: Any, n: int, prefix: str) -> list[Any]:
    """Async sends of n messages; returns their message ids in receipt-callback order."""
    done = threading.Event()
    receipts: list[Any] = []
    lock = threading.Lock()

    def callback(result: Any, message_id: Any) -> None:
        assert result == pulsar.Result.Ok, result
        with lock:
            receipts.append(message_id)
            if len(receipts) == n:
                done.set()

    for i in range(n):
        producer.send_async(f"{prefix}-{i}".encode(), callback)
    assert done.wait(60), f"{len(receipts)} of {n} receipts"
    return receipts


def test_receipts_and_storage_keep_send_order_when_adds_must_wait(
    tight: StandaloneProcess,
) -> None:
    client = official_client(tight)
    try:
        topic = topic_name("tight")
        consumer = client.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
        producer = client.create_producer(topic, batching_enabled=False, max_pending_messages=N)
        receipts = send_all(producer, N, "m")
        ids = [(m.ledger_id(), m.entry_id()) for m in receipts]
        assert ids == sorted(ids)  # receipts in SEND order
        assert len({m.ledger_id() for m in receipts}) >= N // 50  # across rollovers
        got = [consumer.receive(timeout_millis=10_000).data() for _ in range(N)]
        assert got == [f"m-{i}".encode() for i in range(N)]
        with pytest.raises(pulsar.Timeout):
            consumer.receive(timeout_millis=300)
    finally:
        client.close()


def test_a_producer_dropped_mid_flight_leaves_the_topic_usable(tight: StandaloneProcess) -> None:
    topic = topic_name("dropped")
    first = official_client(tight)
    # The subscription exists first: without one (and no retention) rolled-over ledgers go.
    first.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest).close()
    producer = first.create_producer(topic, batching_enabled=False, max_pending_messages=N)
    for i in range(N):
        producer.send_async(f"early-{i}".encode(), lambda *_: None)
    first.close()  # closes the connection with sends still in flight
    second = official_client(tight)
    try:
        consumer = second.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
        late = second.create_producer(topic, batching_enabled=False)
        late.send(b"late")
        seen = []
        while True:
            msg = consumer.receive(timeout_millis=10_000)
            seen.append(msg.data())
            if msg.data() == b"late":
                break
        early = [int(d.split(b"-")[1]) for d in seen[:-1]]
        assert early == list(range(len(early)))  # a prefix of what was sent, in order, once
    finally:
        second.close()
