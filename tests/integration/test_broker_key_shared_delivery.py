"""Key_Shared delivery through ``magnetar standalone`` with the official client.

What a user observes with 400 unbatched messages over 20 keys and two consumers: every message
reaches the application exactly once, each key through one consumer only; and a consumer that
stops receiving (its receiver queue full, so no permits) holds back only its own keys — the
other consumer still gets every message of its keys.
"""

from __future__ import annotations

from typing import Any

import pulsar

from tests.kit.standalone import topic_name

MESSAGES = 400
KEYS = 20
STALLED_QUEUE = 10  # the stalled consumer's receiver queue: it takes no more than this


def drain_all(consumers: list[Any], expected: int, wait_ms: int = 1000) -> list[tuple[int, Any]]:
    """Receive and ack from each consumer in turn until ``expected`` messages arrived or a whole
    round over the consumers brought nothing within ``wait_ms`` each."""
    got: list[tuple[int, Any]] = []
    progress = True
    while len(got) < expected and progress:
        progress = False
        for index, consumer in enumerate(consumers):
            while True:
                try:
                    msg = consumer.receive(timeout_millis=wait_ms)
                except pulsar.Timeout:
                    break
                consumer.acknowledge(msg)
                got.append((index, msg))
                progress = True
    return got


def produce(client: Any, topic: str) -> None:
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(MESSAGES):
        producer.send_async(f"{i}".encode(), None, partition_key=f"k{i % KEYS}")
    producer.flush()
    producer.close()


def owners(got: list[tuple[int, Any]]) -> dict[str, int]:
    """Key -> the one consumer index that received it (fails if a key went to two)."""
    owner: dict[str, int] = {}
    for index, msg in got:
        key = msg.partition_key()
        assert owner.setdefault(key, index) == index, f"{key} went to two consumers"
    return owner


def test_two_default_consumers_get_every_message_of_every_key(client: Any) -> None:
    topic = topic_name("key-shared-400")
    consumers = [
        client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.KeyShared)
        for _ in range(2)
    ]
    produce(client, topic)
    got = drain_all(consumers, MESSAGES)
    values = sorted(int(msg.data()) for _, msg in got)
    assert values == list(range(MESSAGES)), f"{MESSAGES - len(set(values))} messages missing"
    assert len(owners(got)) == KEYS
    assert {index for _, index in owners(got).items()} == {0, 1}


def test_a_consumer_without_permits_does_not_hold_back_the_other_keys(client: Any) -> None:
    topic = topic_name("key-shared-stalled")
    active = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.KeyShared)
    stalled = client.subscribe(
        topic, "sub", consumer_type=pulsar.ConsumerType.KeyShared, receiver_queue_size=STALLED_QUEUE
    )
    produce(client, topic)
    first = drain_all([active], MESSAGES)  # ``stalled`` receives nothing meanwhile
    rest = drain_all([stalled, active], MESSAGES - len(first))  # index 0: stalled, 1: active
    got = [(1, m) for _, m in first] + rest
    values = sorted(int(msg.data()) for _, msg in got)
    assert values == list(range(MESSAGES)), f"{MESSAGES - len(set(values))} messages missing"
    active_keys = {key for key, index in owners(got).items() if index == 1}
    late = [msg.partition_key() for index, msg in rest if index == 1]
    assert not late, f"{len(late)} messages of the active consumer's keys waited for the other"
    assert active_keys, "the active consumer owns no key"
    # Otherwise nothing was held back and the test proves nothing: the stalled consumer's keys
    # must have brought it more messages than its receiver queue takes.
    held_back = [msg for index, msg in rest if index == 0]
    assert len(held_back) > STALLED_QUEUE, f"the stalled consumer had {len(held_back)} messages"
