"""Topic stats rates (msgRateIn/Out, msgThroughputIn/Out) under steady traffic, official client.

The standalone runs with a 2-second stats window (``MAGNETAR_STANDALONE_STATS_UPDATE_FREQUENCY_S``)
so the test sees rates appear while traffic flows and fall back to 0 once it stops.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.kit.process import running
from tests.kit.standalone import StandaloneProcess, admin_call, official_client, topic_name

WINDOW_S = 2.0
RECEIVE_MS = 5000


@pytest.fixture(scope="module")
def short_window(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneProcess]:
    sa = StandaloneProcess(
        data_dir=tmp_path_factory.mktemp("rates") / "data",
        env={"MAGNETAR_STANDALONE_STATS_UPDATE_FREQUENCY_S": str(WINDOW_S)},
    )
    with running(sa) as process:
        yield process


def stats(sa: StandaloneProcess, topic: str) -> Any:
    path = topic.removeprefix("persistent://")
    return admin_call(sa, "GET", f"/admin/v2/persistent/{path}/stats")


def test_rates_under_steady_traffic_then_zero(short_window: StandaloneProcess) -> None:
    client = official_client(short_window, operation_timeout_s=10)
    try:
        topic = topic_name("rates")
        consumer = client.subscribe(topic, "sub")
        producer = client.create_producer(topic, batching_enabled=False)
        payload = b"x" * 1000
        seen: dict[str, Any] = {}
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            for _ in range(20):
                producer.send_async(payload, None)
            producer.flush()
            for _ in range(20):
                consumer.acknowledge(consumer.receive(timeout_millis=RECEIVE_MS))
            s = stats(short_window, topic)
            if s["msgRateIn"] > 0 and s["msgRateOut"] > 0:
                seen = s
                break
        assert seen, "rates stayed at 0 under steady traffic"
        assert seen["msgThroughputIn"] > seen["msgRateIn"] * 1000  # 1000-byte payloads + metadata
        assert seen["msgThroughputOut"] > 0
        assert seen["publishers"][0]["msgRateIn"] > 0
        sub = seen["subscriptions"]["sub"]
        assert sub["msgRateOut"] > 0
        assert sub["consumers"][0]["msgRateOut"] > 0
        assert sub["msgRateExpired"] == 0.0

        # Traffic stops: after one window the rates read 0 again (the window is the setting's).
        time.sleep(WINDOW_S + 0.5)
        idle = stats(short_window, topic)
        assert idle["msgRateIn"] == 0.0
        assert idle["msgRateOut"] == 0.0
        assert idle["msgInCounter"] == seen["msgInCounter"]
        producer.close()
        consumer.close()
    finally:
        client.close()
