"""Produce and consume through a real ``magnetar standalone`` with the OFFICIAL pulsar-client.

One standalone process serves the whole module (each test uses its own topic names). The
client's calls block; every receive has a timeout, so a broker bug fails fast.
"""

from __future__ import annotations

import uuid
from typing import Any

import pulsar
import pytest

from tests.kit.standalone import topic_name

RECEIVE_MS = 5000


def receive_all(consumer: Any, n: int, ack: bool = True) -> list[bytes]:
    got = []
    for _ in range(n):
        msg = consumer.receive(timeout_millis=RECEIVE_MS)
        got.append(msg.data())
        if ack:
            consumer.acknowledge(msg)
    return got


def test_sync_send_and_receive_in_order(client: Any) -> None:
    topic = topic_name("sync")
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic, batching_enabled=False)
    ids = [producer.send(f"m{i}".encode()) for i in range(20)]
    assert [(i.ledger_id(), i.entry_id()) for i in ids] == sorted(
        (i.ledger_id(), i.entry_id()) for i in ids
    )
    assert receive_all(consumer, 20) == [f"m{i}".encode() for i in range(20)]
    msg = consumer.receive  # nothing more: the next receive times out
    with pytest.raises(pulsar.Timeout):
        msg(timeout_millis=200)


COMPRESSIONS = ["NONE", "LZ4", "ZLib", "ZSTD", "SNAPPY"]


@pytest.mark.parametrize("batching", [False, True])
@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_async_send_every_compression(client: Any, compression: str, batching: bool) -> None:
    topic = topic_name(f"async-{compression.lower()}")
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(
        topic,
        batching_enabled=batching,
        batching_max_messages=50,
        batching_max_publish_delay_ms=20,
        compression_type=getattr(pulsar.CompressionType, compression),
    )
    results: list[Any] = []
    payloads = [(f"payload-{i}-" * 20).encode() for i in range(200)]
    for payload in payloads:
        producer.send_async(payload, lambda res, mid: results.append(res))
    producer.flush()
    assert len(results) == len(payloads)
    assert all(r == pulsar.Result.Ok for r in results)
    assert receive_all(consumer, len(payloads)) == payloads


def test_exclusive_second_consumer_is_refused(client: Any) -> None:
    topic = topic_name("exclusive")
    client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Exclusive)
    with pytest.raises(pulsar.ConsumerBusy):
        client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Exclusive)


def test_shared_consumers_split_the_messages(client: Any) -> None:
    topic = topic_name("shared")
    consumers = [
        client.subscribe(
            topic, "sub", consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=10
        )
        for _ in range(2)
    ]
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(40):
        producer.send(f"s{i}".encode())
    got: list[list[bytes]] = [[], []]
    for _ in range(40):
        for index, consumer in enumerate(consumers):
            try:
                msg = consumer.receive(timeout_millis=100)
            except pulsar.Timeout:
                continue
            got[index].append(msg.data())
            consumer.acknowledge(msg)
        if sum(map(len, got)) == 40:
            break
    assert sorted(got[0] + got[1]) == sorted(f"s{i}".encode() for i in range(40))
    assert got[0]
    assert got[1]


def test_unacked_messages_are_redelivered_to_the_next_consumer(client: Any) -> None:
    topic = topic_name("redeliver")
    first = client.subscribe(topic, "sub")
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(5):
        producer.send(f"r{i}".encode())
    msgs = [first.receive(timeout_millis=RECEIVE_MS) for _ in range(5)]
    first.acknowledge(msgs[0])
    first.acknowledge(msgs[2])
    first.close()
    second = client.subscribe(topic, "sub")
    redelivered = []
    for _ in range(3):
        msg = second.receive(timeout_millis=RECEIVE_MS)
        redelivered.append(msg.data())
        assert msg.redelivery_count() == 1  # put back once when the first consumer closed
        second.acknowledge(msg)
    assert redelivered == [b"r1", b"r3", b"r4"]


def test_cumulative_ack_of_batches(client: Any) -> None:
    topic = topic_name("cumulative")
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(
        topic, batching_enabled=True, batching_max_messages=10, batching_max_publish_delay_ms=50
    )
    for i in range(30):
        producer.send_async(f"c{i}".encode(), None)
    producer.flush()
    msgs = [consumer.receive(timeout_millis=RECEIVE_MS) for _ in range(30)]
    # Cumulative ack inside a batch (batch-index acks off) acknowledges up to the previous
    # entry: a new consumer gets that whole batch again, and nothing before it.
    consumer.acknowledge_cumulative(msgs[24])
    consumer.close()
    entry = msgs[24].message_id().entry_id()
    first_of_batch = min(i for i, m in enumerate(msgs) if m.message_id().entry_id() == entry)
    again = client.subscribe(topic, "sub")
    rest = receive_all(again, 30 - first_of_batch)
    assert rest == [f"c{i}".encode() for i in range(first_of_batch, 30)]
    with pytest.raises(pulsar.Timeout):
        again.receive(timeout_millis=200)


def test_negative_ack_redelivers_with_a_count(client: Any) -> None:
    topic = topic_name("nack")
    consumer = client.subscribe(
        topic, "sub", consumer_type=pulsar.ConsumerType.Shared, negative_ack_redelivery_delay_ms=100
    )
    producer = client.create_producer(topic, batching_enabled=False)
    producer.send(b"once")
    msg = consumer.receive(timeout_millis=RECEIVE_MS)
    consumer.negative_acknowledge(msg)
    again = consumer.receive(timeout_millis=RECEIVE_MS)
    assert again.data() == b"once"
    assert again.redelivery_count() == 1
    consumer.acknowledge(again)


def test_initial_position_earliest_and_latest(client: Any) -> None:
    topic = topic_name("initial")
    producer = client.create_producer(topic, batching_enabled=False)
    producer.send(b"before")
    latest = client.subscribe(topic, "latest")
    earliest = client.subscribe(topic, "earliest", initial_position=pulsar.InitialPosition.Earliest)
    producer.send(b"after")
    assert receive_all(earliest, 2) == [b"before", b"after"]
    assert receive_all(latest, 1) == [b"after"]


def test_non_persistent_topic_delivers_to_connected_consumers(client: Any) -> None:
    topic = f"non-persistent://public/default/np-{uuid.uuid4().hex[:8]}"
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(10):
        producer.send(f"np{i}".encode())
    assert receive_all(consumer, 10, ack=False) == [f"np{i}".encode() for i in range(10)]


def test_producer_on_missing_namespace_is_refused(client: Any) -> None:
    with pytest.raises(pulsar.TopicNotFound):
        client.create_producer("persistent://no-such-tenant/ns/t", send_timeout_millis=3000)


def test_unsubscribe_forgets_the_subscription(client: Any) -> None:
    topic = topic_name("unsub")
    producer = client.create_producer(topic, batching_enabled=False)
    consumer = client.subscribe(topic, "sub")
    producer.send(b"x")
    consumer.unsubscribe()
    again = client.subscribe(topic, "sub")  # a new subscription starts at latest
    producer.send(b"y")
    assert receive_all(again, 1) == [b"y"]


def test_duplicate_producer_name_is_refused(client: Any) -> None:
    topic = topic_name("producer-busy")
    client.create_producer(topic, producer_name="only-one")
    with pytest.raises(pulsar.ProducerBusy):
        client.create_producer(topic, producer_name="only-one")


def test_changing_a_subscription_type_is_refused(client: Any) -> None:
    topic = topic_name("sub-type")
    client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
    with pytest.raises(pulsar.ConsumerBusy):
        client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Failover)
