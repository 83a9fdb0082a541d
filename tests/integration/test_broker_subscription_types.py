"""Failover, Key_Shared and batch-index acks through ``magnetar standalone``, official client.

The subscription decisions come from ``magnetar.broker.dispatch``; these tests check what a
user observes: a failover standby takes over with the unacked messages, every key of a
Key_Shared subscription goes to exactly one consumer in order, and batch indexes acknowledged
one by one are not redelivered.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pulsar

from tests.kit.standalone import receive_until_quiet, topic_name

RECEIVE_MS = 5000


def test_failover_standby_takes_over_with_unacked_messages(client: Any) -> None:
    topic = topic_name("failover")
    first = client.subscribe(
        topic, "sub", consumer_type=pulsar.ConsumerType.Failover, consumer_name="a"
    )
    second = client.subscribe(
        topic, "sub", consumer_type=pulsar.ConsumerType.Failover, consumer_name="b"
    )
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(6):
        producer.send(f"f{i}".encode())
    active = [first.receive(timeout_millis=RECEIVE_MS) for _ in range(6)]
    assert [m.data() for m in active] == [f"f{i}".encode() for i in range(6)]
    assert receive_until_quiet(second, 200) == []  # the standby gets nothing while "a" is active
    for msg in active[:3]:
        first.acknowledge(msg)
    first.close()
    taken = [second.receive(timeout_millis=RECEIVE_MS).data() for _ in range(3)]
    assert taken == [b"f3", b"f4", b"f5"]


def test_key_shared_sends_each_key_to_one_consumer_in_order(client: Any) -> None:
    topic = topic_name("key-shared")
    consumers = [
        client.subscribe(
            topic, "sub", consumer_type=pulsar.ConsumerType.KeyShared, consumer_name=f"c{i}"
        )
        for i in range(3)
    ]
    producer = client.create_producer(topic, batching_enabled=False)
    keys = [f"key-{k}" for k in range(8)]
    for i in range(80):
        producer.send(f"{i}".encode(), partition_key=keys[i % len(keys)])
    owner: dict[str, int] = {}
    per_key: dict[str, list[int]] = defaultdict(list)
    total = 0
    for index, consumer in enumerate(consumers):
        for msg in receive_until_quiet(consumer, 300):
            key = msg.partition_key()
            assert owner.setdefault(key, index) == index, f"{key} went to two consumers"
            per_key[key].append(int(msg.data()))
            consumer.acknowledge(msg)
            total += 1
    assert total == 80
    for key, values in per_key.items():
        assert values == sorted(values), f"{key} out of order"
    assert len(set(owner.values())) >= 2  # the keys are spread over the consumers


def test_batch_index_acks_are_not_redelivered(client: Any) -> None:
    topic = topic_name("batch-index")
    consumer = client.subscribe(topic, "sub", batch_index_ack_enabled=True)
    producer = client.create_producer(
        topic, batching_enabled=True, batching_max_messages=10, batching_max_publish_delay_ms=1000
    )
    for i in range(10):
        producer.send_async(f"i{i}".encode(), None)
    producer.flush()
    msgs = [consumer.receive(timeout_millis=RECEIVE_MS) for _ in range(10)]
    assert len({(m.message_id().ledger_id(), m.message_id().entry_id()) for m in msgs}) == 1
    for msg in msgs[:4]:
        consumer.acknowledge(msg)
    consumer.close()  # flushes the grouped acks; the broker answers once they are applied
    consumer = client.subscribe(topic, "sub", batch_index_ack_enabled=True)
    again = [m.data() for m in receive_until_quiet(consumer, 500)]
    assert again == [f"i{i}".encode() for i in range(4, 10)]
