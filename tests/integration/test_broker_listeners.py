"""Named listeners on a real standalone with the official client: a client that names a
listener is answered with that listener's address (and works through it), one without a name
gets the default address, an unknown name is refused instead of answered with the default."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pulsar
import pytest

from magnetar.client import Client
from magnetar.client.errors import ServerErrorResponse
from tests.kit.ports import free_port
from tests.kit.process import running
from tests.kit.standalone import StandaloneProcess, StandaloneStartError, topic_name


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneProcess]:
    broker_port, web_port = free_port(), free_port()
    # "outside" reaches the same broker by another loopback name: localhost instead of 127.0.0.1.
    listeners = (
        f"inside:pulsar://127.0.0.1:{broker_port},inside:http://127.0.0.1:{web_port},"
        f"outside:pulsar://localhost:{broker_port},outside:http://localhost:{web_port},"
        f"dead:pulsar://127.0.0.1:{free_port()}"  # nothing listens there
    )
    process = StandaloneProcess(
        data_dir=tmp_path_factory.mktemp("listeners") / "data",
        broker_port=broker_port,
        web_port=web_port,
        extra_args=["--advertised-listeners", listeners],
    )
    with running(process) as started:
        yield started


def _http_lookup(standalone: StandaloneProcess, topic: str, listener: str | None) -> dict[str, str]:
    path = topic.replace("persistent://", "/lookup/v2/topic/persistent/")
    query = f"?listenerName={listener}" if listener else ""
    with urllib.request.urlopen(f"{standalone.web_url}{path}{query}", timeout=10) as answer:
        result: dict[str, str] = json.loads(answer.read())
        return result


def test_http_lookup_answers_per_listener(standalone: StandaloneProcess) -> None:
    topic = topic_name("listeners-http")
    port = standalone.broker_port
    assert _http_lookup(standalone, topic, None)["brokerUrl"] == f"pulsar://127.0.0.1:{port}"
    assert _http_lookup(standalone, topic, "outside")["brokerUrl"] == f"pulsar://localhost:{port}"
    assert _http_lookup(standalone, topic, "outside")["httpUrl"].startswith("http://localhost:")
    with pytest.raises(urllib.error.HTTPError) as refused:
        _http_lookup(standalone, topic, "nowhere")
    assert refused.value.code == 503
    assert "nowhere" in refused.value.read().decode()


def test_the_official_client_works_through_its_listener(standalone: StandaloneProcess) -> None:
    """Compatibility: the broker accepts the official client's listener name and answers it
    (an unanswered name fails the client, as the next tests show). On loopback the standalone
    says 'proxy through the service URL', so this does not prove which address the client was
    told; the lookup tests (HTTP above, binary below) check the addresses."""
    topic = topic_name("listeners-client")
    client = pulsar.Client(standalone.service_url, listener_name="outside")
    try:
        consumer = client.subscribe(topic, "s")
        producer = client.create_producer(topic)
        producer.send(b"through the outside listener")
        assert consumer.receive(timeout_millis=5000).data() == b"through the outside listener"
    finally:
        client.close()


async def test_binary_lookup_answers_per_listener(standalone: StandaloneProcess) -> None:
    """magnetar.client's lookups carry the listener name; the answers name its address (the
    standalone still says 'proxy through the service URL', as Pulsar's does on loopback)."""
    topic = topic_name("listeners-binary")
    port = standalone.broker_port
    answers = {}
    for name in (None, "outside", "dead"):
        async with Client(standalone.service_url, listener_name=name) as ours:
            answers[name] = (await ours.lookup.lookup(topic)).logical_address
    assert answers[None] == f"127.0.0.1:{port}"
    assert answers["outside"] == f"localhost:{port}"
    assert answers["dead"] != answers[None]
    async with Client(standalone.service_url, listener_name="nowhere") as ours:
        with pytest.raises(ServerErrorResponse, match="nowhere"):
            await ours.lookup.lookup(topic)


def test_an_unknown_listener_is_refused(standalone: StandaloneProcess) -> None:
    client = pulsar.Client(
        standalone.service_url, listener_name="nowhere", operation_timeout_seconds=3
    )
    try:
        with pytest.raises(pulsar.PulsarException):
            client.create_producer(topic_name("listeners-unknown"))
    finally:
        client.close()


def test_a_bad_listener_setting_stops_the_start_with_a_reason(tmp_path: Path) -> None:
    process = StandaloneProcess(
        data_dir=tmp_path / "data", extra_args=["--advertised-listeners", "a:ftp://h:1"]
    )
    with pytest.raises(StandaloneStartError, match="advertised listener 'a'"):
        process.start()
    process.stop()
