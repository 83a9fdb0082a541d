"""magnetar produce / consume / perf as a user runs them, against a real standalone process."""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any

import pytest

from tests.kit.ports import free_port
from tests.kit.process import MAGNETAR_CLI
from tests.kit.standalone import StandaloneProcess, topic_name


def magnetar(
    *args: str, stdin: str | None = None, timeout: float = 60.0
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MAGNETAR_CLI, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def ok(*args: str, stdin: str | None = None) -> str:
    result = magnetar(*args, stdin=stdin)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_produce_then_consume_text_and_json(standalone: StandaloneProcess) -> None:
    topic, url = topic_name("cli"), standalone.service_url
    out = ok("produce", topic, "-m", "one", "-m", "two", "-m", "drei ü",
             "--key", "k1", "-p", "a=1", "-p", "b=x=y", "-v", "--service-url", url)  # fmt: skip
    lines = out.splitlines()
    assert lines[-1] == "3 messages produced"
    assert len(lines) == 4  # three ids with -v

    text = ok("consume", topic, "-s", "text", "-n", "3", "--position", "earliest",
              "--timeout", "10", "--service-url", url)  # fmt: skip
    assert text.count("----- got message -----") == 3
    assert "key:[k1], properties:[a=1, b=x=y], content:one" in text
    assert "content:drei ü" in text

    out = ok("consume", topic, "-s", "json", "-n", "3", "--position", "earliest",
             "-o", "json", "--timeout", "10", "--service-url", url)  # fmt: skip
    docs = [json.loads(line) for line in out.splitlines()]
    assert [d["data"] for d in docs] == ["one", "two", "drei ü"]
    for doc in docs:
        assert doc["key"] == "k1"
        assert doc["properties"] == {"a": "1", "b": "x=y"}
        assert doc["redelivery_count"] == 0
        assert doc["encoding"] == "utf-8"
        assert abs(doc["publish_time"] / 1000 - time.time()) < 120
        assert doc["message_id"].count(":") in (2, 3)

    # everything was acknowledged: the subscription has nothing left, and the wait times out
    empty = magnetar("consume", topic, "-s", "json", "-n", "1", "--timeout", "1",
                     "--service-url", url)  # fmt: skip
    assert empty.returncode == 1
    assert "received 0 of 1" in empty.stderr


def test_stdin_lines_and_official_consumer(standalone: StandaloneProcess, client: Any) -> None:
    topic, url = topic_name("stdin"), standalone.service_url
    consumer = client.subscribe(topic, "official")
    out = ok("produce", topic, "-n", "2", "--no-batching", "--compression", "lz4",
             "--service-url", url, stdin="alpha\nbeta\n")  # fmt: skip
    assert out.strip() == "4 messages produced"
    got = []
    for _ in range(4):
        message = consumer.receive(timeout_millis=10_000)
        got.append(message.data())
        consumer.acknowledge(message)
    assert got == [b"alpha", b"alpha", b"beta", b"beta"]
    consumer.close()

    out = ok("consume", topic, "-s", "hex", "-n", "2", "--position", "earliest", "-o", "hex",
             "--timeout", "10", "--service-url", url)  # fmt: skip
    assert "61 6c 70 68 61" in out  # "alpha"


def _perf_json(stdout: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(stdout.strip().splitlines()[-1])
    return doc


def _sane(doc: dict[str, Any], count: int) -> None:
    assert doc["messages"] == count
    assert doc["errors"] == 0
    lat = doc["latency_ms"]
    assert 0 <= lat["p50"] <= lat["p95"] <= lat["p99"] <= lat["p99.9"] <= lat["max"] < 30_000
    assert doc["msg_per_s"] > 0


def test_perf_produce_json(standalone: StandaloneProcess) -> None:
    out = ok("perf", "produce", topic_name("perf"), "-n", "2000", "--json",
             "--service-url", standalone.service_url)  # fmt: skip
    doc = _perf_json(out)
    assert doc["client"] == "magnetar"
    _sane(doc, 2000)
    assert doc["bytes"] == 2000 * 1024


def test_perf_e2e_json(standalone: StandaloneProcess) -> None:
    out = ok("perf", "e2e", topic_name("e2e"), "-n", "300", "--size", "100", "--json",
             "--service-url", standalone.service_url)  # fmt: skip
    doc = _perf_json(out)
    _sane(doc, 300)
    _sane(doc["produce"], 300)


@pytest.mark.parametrize("mode", ["produce", "e2e"])
def test_perf_with_the_official_client(standalone: StandaloneProcess, mode: str) -> None:
    out = ok("perf", mode, topic_name("official"), "-n", "500", "--json",
             "--use-official-client", "--service-url", standalone.service_url)  # fmt: skip
    doc = _perf_json(out)
    assert doc["client"] == "pulsar-client"
    _sane(doc, 500)


def test_unreachable_broker_is_one_clear_error() -> None:
    url = f"pulsar://127.0.0.1:{free_port()}"
    started = time.monotonic()
    result = magnetar("produce", "t", "-m", "x", "--service-url", url, timeout=20)
    assert time.monotonic() - started < 10
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: cannot connect to the broker at " + url)
    assert "--service-url" in lines[0]


def test_missing_tenant_names_it(standalone: StandaloneProcess) -> None:
    result = magnetar("produce", "persistent://no-such-tenant/ns/t", "-m", "x",
                      "--service-url", standalone.service_url)  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.startswith("error: ")
    assert "no-such-tenant" in result.stderr


def test_perf_consume_counts_what_is_produced(standalone: StandaloneProcess) -> None:
    topic, url = topic_name("perfc"), standalone.service_url
    consumer = subprocess.Popen(
        [*MAGNETAR_CLI, "perf", "consume", topic, "-n", "300", "--json",
         "--service-url", url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert consumer.stderr is not None
        first = consumer.stderr.readline()  # the first progress line: subscribed and measuring
        assert first.startswith("consume:"), first
        ok("produce", topic, "-m", "m", "-n", "300", "--service-url", url)
        out, err = consumer.communicate(timeout=30)
    finally:
        consumer.kill()
        consumer.wait(timeout=10)
    assert consumer.returncode == 0, err
    doc = _perf_json(out)
    assert doc["label"] == "consume"
    _sane(doc, 300)
