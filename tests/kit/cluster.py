"""Helpers for tests against several brokers (holds no tests).

One admin call (:func:`http`), the official client pointed at several brokers as a user would
point it at a cluster (:func:`client_on`), reading a topic back to its end (:func:`read_all`), a
fresh topic name and a bounded wait for a condition. Blocking: call them from the test's thread.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from typing import Any

import pulsar

from tests.kit.broker import BrokerProcess


def http(broker: BrokerProcess, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """One admin call: (status, JSON body, or text when it is not JSON, or the error's reason).
    urllib follows a GET's 307 to the owner."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(broker.web_url + path, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            raw = response.read()
            try:
                return response.status, json.loads(raw) if raw else None
            except ValueError:
                return response.status, raw.decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def client_on(
    *brokers: BrokerProcess,
    operation_timeout_s: int = 20,
    log_level: pulsar.LoggerLevel = pulsar.LoggerLevel.Warn,
) -> pulsar.Client:
    """The official client with a service URL that lists ``brokers`` (``pulsar://h:p1,h:p2``)."""
    return pulsar.Client(
        "pulsar://" + ",".join(b.broker_id for b in brokers),
        operation_timeout_seconds=operation_timeout_s,
        logger=pulsar.ConsoleLogger(log_level),
    )


def read_all(
    client: pulsar.Client, topic: str, expected: int, *, first_ms: int = 15000, quiet_ms: int = 3000
) -> list[bytes]:
    """Every payload of ``topic`` from the start: wait up to ``first_ms`` for each message until
    ``expected`` arrived, then stop after ``quiet_ms`` without one (so extras are seen too)."""
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    got: list[bytes] = []
    try:
        while True:
            try:
                got.append(reader.read_next(quiet_ms if len(got) >= expected else first_ms).data())
            except pulsar.Timeout:
                return got
    finally:
        reader.close()


def fresh_topic(prefix: str) -> str:
    """A new persistent topic in ``public/default``."""
    return f"persistent://public/default/{prefix}-{uuid.uuid4().hex[:8]}"


def wait_for(condition: Callable[[], bool], what: str, timeout_s: float = 30.0) -> None:
    """Poll ``condition`` every 0.1 s; fail naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout_s:g}s: {what}"
        time.sleep(0.1)
