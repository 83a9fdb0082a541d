"""``allowAutoTopicCreation=false`` enforced, against a real standalone whose broker default is
false (``MAGNETAR_STANDALONE_ALLOW_AUTO_TOPIC_CREATION``): producers and consumers on a topic that
does not exist get TopicNotFound (official client and ``magnetar.client``); a namespace override
``autoTopicCreation`` = true lets them create it; topics created through the admin API and the
partitions of a partitioned topic are served as usual."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pulsar
import pytest

from magnetar.client import Client, TopicNotFound
from tests.kit.process import running
from tests.kit.standalone import StandaloneProcess, admin_call

ENV = {"MAGNETAR_STANDALONE_ALLOW_AUTO_TOPIC_CREATION": "false"}


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneProcess]:
    sa = StandaloneProcess(data_dir=tmp_path_factory.mktemp("noauto") / "data", env=ENV)
    with running(sa) as process:
        yield process


def _namespace(standalone: StandaloneProcess, allow: bool | None) -> str:
    ns = f"public/auto-{uuid.uuid4().hex[:8]}"
    admin_call(standalone, "PUT", f"/admin/v2/namespaces/{ns}")
    if allow is not None:
        body = {"allowAutoTopicCreation": allow, "topicType": "non-partitioned"}
        admin_call(standalone, "POST", f"/admin/v2/namespaces/{ns}/autoTopicCreation", body)
    return ns


def test_missing_topic_is_refused_by_the_broker_default(
    client: Any, standalone: StandaloneProcess
) -> None:
    topic = f"persistent://{_namespace(standalone, None)}/missing"
    with pytest.raises(pulsar.TopicNotFound):
        client.create_producer(topic)
    with pytest.raises(pulsar.TopicNotFound):
        client.subscribe(topic, "sub")
    with pytest.raises(pulsar.TopicNotFound):
        client.create_producer(f"non-persistent://{topic.removeprefix('persistent://')}")


def test_namespace_override_allows_creation(client: Any, standalone: StandaloneProcess) -> None:
    ns = _namespace(standalone, True)
    producer = client.create_producer(f"persistent://{ns}/made-by-producer")
    producer.send(b"x")
    client.subscribe(f"persistent://{ns}/made-by-consumer", "sub")
    assert sorted(admin_call(standalone, "GET", f"/admin/v2/persistent/{ns}")) == [
        f"persistent://{ns}/made-by-consumer",
        f"persistent://{ns}/made-by-producer",
    ]


def test_namespace_override_false_refuses(client: Any, standalone: StandaloneProcess) -> None:
    ns = _namespace(standalone, False)
    with pytest.raises(pulsar.TopicNotFound):
        client.create_producer(f"persistent://{ns}/missing")


def test_existing_topics_and_partitions_are_served(
    client: Any, standalone: StandaloneProcess
) -> None:
    ns = _namespace(standalone, None)
    admin_call(standalone, "PUT", f"/admin/v2/persistent/{ns}/plain")
    admin_call(standalone, "PUT", f"/admin/v2/persistent/{ns}/parts/partitions", 3)
    consumer = client.subscribe(f"persistent://{ns}/parts", "sub")
    producer = client.create_producer(f"persistent://{ns}/parts")
    producer.send(b"p")
    assert consumer.receive(timeout_millis=5000).data() == b"p"
    client.create_producer(f"persistent://{ns}/plain").send(b"q")


async def test_magnetar_client_gets_topic_not_found(standalone: StandaloneProcess) -> None:
    topic = f"persistent://{_namespace(standalone, None)}/missing"
    async with Client(standalone.service_url, operation_timeout_s=5) as ours:
        with pytest.raises(TopicNotFound):
            await ours.create_producer(topic)
        with pytest.raises(TopicNotFound):
            await ours.subscribe(topic, "sub")
