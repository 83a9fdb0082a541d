"""Durability: what ``magnetar standalone`` acknowledged survives SIGKILL and a restart.

10,000 messages are produced with batching and every send is acknowledged; the process is
killed with SIGKILL (no shutdown at all) and restarted on the same data dir; a consumer then
reads all 10,000 back in order. Acks survive too: messages acknowledged before the kill are
not redelivered after it. And a kill in the middle of a load loses no acknowledged message.
The journal fsyncs (``journal_sync=True``), as in production.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

import pulsar

from tests.kit.standalone import StandaloneProcess, official_client

RECEIVE_MS = 10_000
N = 10_000
UNDER_LOAD_ACKED = 30_000


def batching_producer(
    client: Any, topic: str, *, per_batch: int, delay_ms: int, pending: int
) -> Any:
    """A batching producer that blocks (rather than fails) when ``pending`` sends are queued."""
    return client.create_producer(
        topic,
        batching_enabled=True,
        batching_max_messages=per_batch,
        batching_max_publish_delay_ms=delay_ms,
        max_pending_messages=pending,
        block_if_queue_full=True,
    )


def test_acknowledged_messages_survive_kill_9(durable_standalone: StandaloneProcess) -> None:
    topic = "persistent://public/default/durable"
    client = official_client(durable_standalone)
    try:
        # Created before producing, so the subscription's cursor exists on disk.
        acked = client.subscribe(topic, "acked", initial_position=pulsar.InitialPosition.Earliest)
        client.subscribe(topic, "all", initial_position=pulsar.InitialPosition.Earliest).close()
        producer = batching_producer(client, topic, per_batch=100, delay_ms=5, pending=5000)
        results: list[Any] = []
        for i in range(N):
            producer.send_async(f"{i:05d}".encode(), lambda res, _mid: results.append(res))
        producer.flush()
        assert len(results) == N
        assert all(r == pulsar.Result.Ok for r in results)
        # Acknowledge the first half on "acked", and wait until the broker has persisted it.
        for _ in range(N // 2):
            msg = acked.receive(timeout_millis=RECEIVE_MS)
            acked.acknowledge_cumulative(msg)
        acked.close()  # flushes the ack grouping; the close is answered after the acks
    finally:
        client.close()

    durable_standalone.kill()
    durable_standalone.start()

    client = official_client(durable_standalone)
    try:
        everything = client.subscribe(topic, "all", receiver_queue_size=2000)
        got = []
        for _ in range(N):
            msg = everything.receive(timeout_millis=RECEIVE_MS)
            got.append(msg.data())
            everything.acknowledge(msg)
        assert got == [f"{i:05d}".encode() for i in range(N)]

        rest = client.subscribe(topic, "acked")
        first = rest.receive(timeout_millis=RECEIVE_MS).data()
        # Cumulative acks inside a batch stop at the previous entry: at most one batch again.
        assert N // 2 - 100 <= int(first) <= N // 2
    finally:
        client.close()


def test_kill_9_under_load_keeps_every_acknowledged_message(
    durable_standalone: StandaloneProcess,
) -> None:
    """SIGKILL while sends are in flight: what comes back is a prefix of what was sent, in
    order and once, and it holds every message that was acknowledged before the kill."""
    topic = "persistent://public/default/under-load"
    acked: list[int] = []
    lock = threading.Lock()
    client = official_client(durable_standalone, operation_timeout_s=5)
    try:
        client.subscribe(topic, "all", initial_position=pulsar.InitialPosition.Earliest).close()
        producer = batching_producer(client, topic, per_batch=50, delay_ms=1, pending=2000)

        def on_receipt(i: int, result: Any, _mid: Any) -> None:
            if result == pulsar.Result.Ok:
                with lock:
                    acked.append(i)

        sent = 0
        while True:
            with lock:
                if len(acked) >= UNDER_LOAD_ACKED:
                    break
            producer.send_async(f"{sent:06d}".encode(), functools.partial(on_receipt, sent))
            sent += 1
        durable_standalone.kill()  # sends still in flight
        with lock:
            acked_before_kill = set(acked)
    finally:
        client.close()
    assert sent > len(acked_before_kill)  # the kill did catch sends in flight

    durable_standalone.start()
    client = official_client(durable_standalone)
    try:
        everything = client.subscribe(topic, "all", receiver_queue_size=2000)
        got: list[int] = []
        while True:
            try:
                msg = everything.receive(timeout_millis=2000)
            except pulsar.Timeout:
                break
            got.append(int(msg.data()))
        assert got == list(range(len(got)))  # a prefix of what was sent, in order, once
        assert acked_before_kill <= set(got)
    finally:
        client.close()
