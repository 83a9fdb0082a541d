"""The publish path when a topic's managed ledger is full of pending adds.

With ``managed_ledger_max_pending_adds=2`` nearly every SEND takes the broker's slow path (the
add waits for room) instead of the task-free one; receipts must still come back in SEND order
and every message must be stored once, in order, across ledger rollovers. A producer whose
connection drops with sends in flight must not disturb the topic for the next one.

The connection's own bound (``max_pending_publish_requests_per_connection=8``) is small too: a
client that pipelines far more SENDs than that makes the broker stop reading its socket and
resume as receipts go out, with frames cut across socket reads; every SEND is still answered
once, in order.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import pulsar
import pytest

from magnetar.protocol import commands
from magnetar.protocol.frame import Frame, FrameDecoder, encode_command, encode_payload_command
from magnetar.wire import pulsar_api_pb2 as pb
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
            "MAGNETAR_STANDALONE_MAX_PENDING_PUBLISH_REQUESTS_PER_CONNECTION": "8",
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


def test_pipelined_sends_beyond_the_connection_bound_are_all_answered_in_order(
    tight: StandaloneProcess,
) -> None:
    # 400 SENDs of 2 KiB written at once: 50 times the connection's bound and several socket
    # reads, most of them ending inside a frame.
    count, payload = 400, b"x" * 2048
    topic = topic_name("pipelined")
    metadata = pb.MessageMetadata(producer_name="raw-pipelined", sequence_id=0, publish_time=1)
    sends = b"".join(
        encode_payload_command(commands.send(1, seq), metadata, payload) for seq in range(count)
    )
    decoder = FrameDecoder()
    received: list[Frame] = []

    def next_frame(sock: socket.socket) -> Frame:
        while not received:
            data = sock.recv(65536)
            assert data, "the broker closed the connection"
            decoder.feed(data)
            received.extend(decoder.frames())
        return received.pop(0)

    with socket.create_connection(("127.0.0.1", tight.broker_port), timeout=30) as sock:
        sock.sendall(encode_command(commands.connect(client_version="raw-pipelined")))
        assert next_frame(sock).type == pb.BaseCommand.CONNECTED
        sock.sendall(encode_command(commands.producer(topic, producer_id=1, request_id=1)))
        assert next_frame(sock).type == pb.BaseCommand.PRODUCER_SUCCESS
        writer = threading.Thread(target=sock.sendall, args=(sends,), daemon=True)
        writer.start()
        replies = [next_frame(sock) for _ in range(count)]
        writer.join(30)
    assert [f.type for f in replies] == [pb.BaseCommand.SEND_RECEIPT] * count
    assert [f.command.send_receipt.sequence_id for f in replies] == list(range(count))
    ids = [(r.command.send_receipt.message_id.ledger_id, r.command.send_receipt.message_id.entry_id)
           for r in replies]  # fmt: skip
    assert ids == sorted(set(ids))  # one entry each, stored in SEND order
