"""Readers, seek, last message id and namespace listing through ``magnetar standalone``.

Checked with the OFFICIAL pulsar-client: readers from earliest / latest / a message id
(inclusive and exclusive), seek by message id and by publish time (the broker resets the
cursor and makes the consumer resubscribe, as Pulsar does), get_last_message_id on plain and
batched entries, and a regex subscription (GET_TOPICS_OF_NAMESPACE).
"""

from __future__ import annotations

import re
import time
import uuid
from typing import Any

import pulsar
import pytest

from tests.kit.standalone import topic_name

RECEIVE_MS = 5000


def produce(client: Any, topic: str, n: int, prefix: str = "m") -> list[Any]:
    producer = client.create_producer(topic, batching_enabled=False)
    ids = [producer.send(f"{prefix}{i}".encode()) for i in range(n)]
    producer.close()
    return ids


def read(reader: Any, n: int) -> list[bytes]:
    return [reader.read_next(timeout_millis=RECEIVE_MS).data() for _ in range(n)]


def test_reader_from_earliest_and_latest(client: Any) -> None:
    topic = topic_name("reader")
    produce(client, topic, 5)
    earliest = client.create_reader(topic, pulsar.MessageId.earliest)
    latest = client.create_reader(topic, pulsar.MessageId.latest)
    assert read(earliest, 5) == [f"m{i}".encode() for i in range(5)]
    produce(client, topic, 1, prefix="late")
    assert read(latest, 1) == [b"late0"]
    assert read(earliest, 1) == [b"late0"]


@pytest.mark.parametrize("inclusive", [False, True])
def test_reader_from_a_message_id(client: Any, inclusive: bool) -> None:
    topic = topic_name("reader-id")
    ids = produce(client, topic, 6)
    reader = client.create_reader(topic, ids[2], start_message_id_inclusive=inclusive)
    first = 2 if inclusive else 3
    assert read(reader, 6 - first) == [f"m{i}".encode() for i in range(first, 6)]
    with pytest.raises(pulsar.Timeout):
        reader.read_next(timeout_millis=200)


def test_reader_has_message_available_and_last_message_id(client: Any) -> None:
    topic = topic_name("available")
    ids = produce(client, topic, 3)
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    count = 0
    while reader.has_message_available():
        reader.read_next(timeout_millis=RECEIVE_MS)
        count += 1
    assert count == 3
    consumer = client.subscribe(topic, "sub")
    last = consumer.get_last_message_id()
    assert (last.ledger_id(), last.entry_id()) == (ids[-1].ledger_id(), ids[-1].entry_id())


def test_last_message_id_of_a_batch_names_its_last_index(client: Any) -> None:
    topic = topic_name("last-batch")
    producer = client.create_producer(
        topic, batching_enabled=True, batching_max_messages=4, batching_max_publish_delay_ms=1000
    )
    for i in range(4):
        producer.send_async(f"b{i}".encode(), None)
    producer.flush()
    consumer = client.subscribe(topic, "sub")
    assert consumer.get_last_message_id().batch_index() == 3


def test_seek_to_a_message_id_and_to_earliest(client: Any) -> None:
    topic = topic_name("seek-id")
    consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    ids = produce(client, topic, 10)
    for _ in range(10):
        consumer.acknowledge(consumer.receive(timeout_millis=RECEIVE_MS))
    # The broker resets the cursor to the entry itself; the client (3.x) then drops what is not
    # after the seek id, so the next message is the one after it.
    consumer.seek(ids[4])
    got = [consumer.receive(timeout_millis=RECEIVE_MS).data() for _ in range(5)]
    assert got == [f"m{i}".encode() for i in range(5, 10)]
    consumer.seek(pulsar.MessageId.earliest)
    assert consumer.receive(timeout_millis=RECEIVE_MS).data() == b"m0"


def test_seek_by_publish_time(client: Any) -> None:
    topic = topic_name("seek-time")
    consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    produce(client, topic, 3, prefix="old")
    time.sleep(0.05)
    cut = int(time.time() * 1000)
    time.sleep(0.05)
    produce(client, topic, 2, prefix="new")
    for _ in range(5):
        consumer.acknowledge(consumer.receive(timeout_millis=RECEIVE_MS))
    consumer.seek(cut)
    got = [consumer.receive(timeout_millis=RECEIVE_MS).data() for _ in range(2)]
    assert got == [b"new0", b"new1"]
    with pytest.raises(pulsar.Timeout):
        consumer.receive(timeout_millis=200)


def test_regex_subscription_lists_the_namespace(client: Any) -> None:
    stem = f"regex-{uuid.uuid4().hex[:6]}"
    for suffix in ("a", "b"):
        produce(client, f"persistent://public/default/{stem}-{suffix}", 1)
    consumer = client.subscribe(
        re.compile(f"persistent://public/default/{stem}-.*"),
        "sub",
        initial_position=pulsar.InitialPosition.Earliest,
    )
    got = sorted(consumer.receive(timeout_millis=RECEIVE_MS).data() for _ in range(2))
    assert got == [b"m0", b"m0"]
