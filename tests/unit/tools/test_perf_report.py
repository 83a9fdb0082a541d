"""Perf snapshots: interval rates from true elapsed time, totals across intervals, JSON shape."""

from __future__ import annotations

import json

from magnetar.tools.perf_report import MB, PerfMeter


def test_interval_and_total_snapshots() -> None:
    meter = PerfMeter("produce", start=100.0)
    for latency in range(1000, 2000):
        meter.record(1024, latency)
    first = meter.interval(now=101.0)
    assert first.messages == 1000
    assert first.msg_rate == 1000.0
    assert first.mb_rate == 1000 * 1024 / MB
    assert 1490 <= first.latency_us.p50 <= 1520
    for _ in range(500):
        meter.record(1024, 3000)
    meter.record_error()
    second = meter.interval(now=102.0)
    assert second.messages == 500
    assert second.errors == 1
    assert second.latency_us.p50 >= 3000
    total = meter.total(now=102.0)
    assert total.messages == 1500
    assert total.msg_rate == 750.0
    assert total.latency_us.max == 3000
    doc = json.loads(total.to_json())
    assert doc["messages"] == 1500
    assert set(doc["latency_ms"]) == {"mean", "p50", "p95", "p99", "p99.9", "max"}
    assert "total 1,500" in second.progress_line(meter.messages)
    assert "p99.9" in total.summary_text()
