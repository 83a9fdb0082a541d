"""Perf run options, payload stamps and the result document (no broker)."""

from __future__ import annotations

import json

import pytest

from magnetar.tools.errors import BadInput
from magnetar.tools.perf_config import (
    DRAIN_IDLE_S,
    STAMP,
    PerfConfig,
    PerfResult,
    e2e_latency_us,
    payload_template,
    read_stamp,
    stamp,
)
from magnetar.tools.perf_report import PerfMeter


def test_stamp_round_trip_and_fallback() -> None:
    template = payload_template(1024)
    data = stamp(template, 1_700_000_000_123_456)
    assert len(data) == 1024
    assert read_stamp(data) == 1_700_000_000_123_456
    assert e2e_latency_us(data, 0, 1_700_000_000_125_456) == 2000
    tiny = stamp(payload_template(STAMP.size - 1), 5)
    assert read_stamp(tiny) is None
    assert e2e_latency_us(tiny, publish_time_ms=10, now_us=12_500) == 2500
    assert read_stamp(b"x" * 64) is None
    assert e2e_latency_us(b"", publish_time_ms=10, now_us=0) == 0


def test_topics_rates_and_subscription_type() -> None:
    config = PerfConfig("e2e", "t", rate=1000, topics=2, producers=5, consumers=3)
    assert config.topic_names() == ["t-0", "t-1"]
    assert config.producer_rate() == 100
    assert config.effective_subscription_type == "shared"
    single = PerfConfig("consume", "t")
    assert single.topic_names() == ["t"]
    assert single.producer_rate() is None
    assert single.effective_subscription_type == "exclusive"
    assert not single.produces
    assert single.consumes


@pytest.mark.parametrize(
    "kwargs",
    [
        {"producers": 0},
        {"size": 0},
        {"rate": 0.0},
        {"count": -1},
        {"compression": "gzip"},
        {"subscription_type": "queue"},
        {"max_pending": 0},
    ],
)
def test_bad_options(kwargs: dict[str, object]) -> None:
    with pytest.raises(BadInput):
        PerfConfig("produce", "t", **kwargs)  # type: ignore[arg-type]


def test_result_json_and_text() -> None:
    produce, e2e = PerfMeter("produce", 0.0), PerfMeter("e2e", 0.0)
    for i in range(10):
        produce.record(100, 1000 + i)
        e2e.record(100, 2000 + i)
    result = PerfResult("magnetar", "e2e", {"produce": produce.total(1.0), "e2e": e2e.total(1.0)})
    doc = json.loads(result.to_json())
    assert doc["client"] == "magnetar"
    assert doc["label"] == "e2e"
    assert doc["messages"] == 10
    assert doc["produce"]["messages"] == 10
    assert doc["latency_ms"]["p50"] >= 2.0
    text = result.summary_text()
    assert text.startswith("client: magnetar")
    assert "produce summary" in text
    assert "e2e summary" in text


def test_consumed_enough() -> None:
    consume = PerfConfig("consume", "t", count=10)
    assert not consume.consumed_enough(9, None, idle_s=60.0)
    assert consume.consumed_enough(10, None, idle_s=0.0)
    assert consume.consumed_enough(10, 3, idle_s=0.0)  # ``produced`` means nothing here
    assert not PerfConfig("consume", "t").consumed_enough(10**9, None, idle_s=60.0)  # no -n
    e2e = PerfConfig("e2e", "t", count=10)
    assert not e2e.consumed_enough(5, None, idle_s=60.0)  # producers still running
    assert not e2e.consumed_enough(5, 7, idle_s=1.0)
    assert e2e.consumed_enough(7, 7, idle_s=0.0)
    assert e2e.consumed_enough(5, 7, idle_s=DRAIN_IDLE_S + 0.1)  # stragglers given up


def test_consumer_subscription() -> None:
    assert PerfConfig("consume", "t", subscription="s").consumer_subscription() == "s"
    first = PerfConfig("e2e", "t", subscription="s").consumer_subscription()
    second = PerfConfig("e2e", "t", subscription="s").consumer_subscription()
    assert first.startswith("s-e2e-")
    assert second.startswith("s-e2e-")
    assert first != second
