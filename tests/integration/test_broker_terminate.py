"""Terminate a topic (``POST .../terminate``, ``magnetar admin topics terminate``) against a real
standalone: the last message id comes back, new producers get TopicTerminated, a connected
producer's next send fails with it, readers see the end (``has_message_available``), our
client's consumers get REACHED_END_OF_TOPIC, and all of it survives a restart."""

from __future__ import annotations

import asyncio
import subprocess
import time
import urllib.error
from typing import Any

import pulsar
import pytest

from magnetar.client import Client
from tests.kit.process import MAGNETAR_CLI
from tests.kit.standalone import StandaloneProcess, admin_call, topic_name


def _rest(topic: str) -> str:
    return topic.replace("persistent://", "/admin/v2/persistent/")


def _send_until_refused(producer: Any) -> None:
    deadline = time.monotonic() + 10
    while True:
        try:
            producer.send(b"after-the-end")
        except pulsar.TopicTerminated:
            return
        except pulsar.PulsarException:
            pass  # the reconnect that learns about the termination may be under way
        assert time.monotonic() < deadline, "a terminated topic still took messages"
        time.sleep(0.1)


def test_terminate_ends_the_topic(client: Any, standalone: StandaloneProcess) -> None:
    topic = topic_name("term")
    producer = client.create_producer(topic, batching_enabled=False, send_timeout_millis=3000)
    ids = [producer.send(f"m{i}".encode()) for i in range(5)]
    last = admin_call(standalone, "POST", f"{_rest(topic)}/terminate")
    assert (last["ledgerId"], last["entryId"]) == (ids[-1].ledger_id(), ids[-1].entry_id())
    with pytest.raises(pulsar.TopicTerminated):
        client.create_producer(topic)
    _send_until_refused(producer)
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    got = []
    while reader.has_message_available():
        got.append(reader.read_next(timeout_millis=5000).data())
    assert got == [f"m{i}".encode() for i in range(5)]
    # Terminating again answers the same id.
    assert admin_call(standalone, "POST", f"{_rest(topic)}/terminate") == last


def test_terminate_of_a_partitioned_topic_is_refused(standalone: StandaloneProcess) -> None:
    topic = topic_name("term-part")
    admin_call(standalone, "PUT", f"{_rest(topic)}/partitions", 2)
    with pytest.raises(urllib.error.HTTPError) as refused:
        admin_call(standalone, "POST", f"{_rest(topic)}/terminate")
    assert refused.value.code == 405


async def test_our_consumer_gets_reached_end_of_topic(
    ours: Client, standalone: StandaloneProcess
) -> None:
    topic = topic_name("term-ours")
    consumer = await ours.subscribe(topic, "sub", initial_position="Earliest")
    producer = await ours.create_producer(topic, batching_enabled=False)
    for i in range(3):
        await producer.send(f"m{i}".encode())
    assert not consumer.reached_end_of_topic  # type: ignore[union-attr]
    for _ in range(3):
        consumer.acknowledge(await consumer.receive(timeout_s=5))
    admin_call(standalone, "POST", f"{_rest(topic)}/terminate")
    deadline = time.monotonic() + 10
    while not consumer.reached_end_of_topic:  # type: ignore[union-attr]
        assert time.monotonic() < deadline, "REACHED_END_OF_TOPIC never came"
        await asyncio.sleep(0.1)


def test_cli_terminate_prints_the_last_message_id(
    client: Any, standalone: StandaloneProcess
) -> None:
    topic = topic_name("term-cli")
    producer = client.create_producer(topic)
    mid = producer.send(b"only")
    out = subprocess.run(
        [*MAGNETAR_CLI, "admin", "--admin-url", standalone.web_url, "topics", "terminate", topic],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert f"{mid.ledger_id()}:{mid.entry_id()}" in out


def test_termination_survives_a_restart(client: Any, standalone: StandaloneProcess) -> None:
    """Last in the module: it restarts the module's standalone."""
    topic = topic_name("term-restart")
    producer = client.create_producer(topic)
    producer.send(b"before")
    admin_call(standalone, "POST", f"{_rest(topic)}/terminate")
    standalone.stop()
    standalone.start()
    with pytest.raises(pulsar.TopicTerminated):
        client.create_producer(topic)
