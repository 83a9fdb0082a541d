"""RateMeter (broker/stats.py) with an injected clock: windowed rates, young meters, idle gaps."""

from __future__ import annotations

import pytest

from magnetar.broker.stats import MAX_SAMPLES, ZERO, Rate, RateMeter, iso_utc, total


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def steady(meter: RateMeter, clock: FakeClock, per_s: int, seconds: int, size: int = 100) -> None:
    """``per_s`` messages per second, spread over each second, for ``seconds`` seconds."""
    for _ in range(seconds * 10):
        clock.advance(0.1)
        meter.record(per_s // 10, size * (per_s // 10))


def test_new_meter_reads_zero() -> None:
    clock = FakeClock()
    meter = RateMeter(clock)
    assert meter.rate(60) == ZERO
    clock.advance(5)
    assert meter.rate(60) == ZERO


def test_rate_is_meaningful_before_a_full_window() -> None:
    clock = FakeClock()
    meter = RateMeter(clock)
    steady(meter, clock, per_s=1000, seconds=3)
    r = meter.rate(60)
    assert r.messages == pytest.approx(1000, rel=0.01)
    assert r.bytes == pytest.approx(100_000, rel=0.01)


def test_steady_rate_over_full_window() -> None:
    clock = FakeClock()
    meter = RateMeter(clock)
    steady(meter, clock, per_s=500, seconds=200)
    assert meter.rate(60).messages == pytest.approx(500, rel=0.02)
    assert meter.rate(10).messages == pytest.approx(500, rel=0.02)


def test_rate_follows_a_change_within_the_window() -> None:
    clock = FakeClock()
    meter = RateMeter(clock)
    steady(meter, clock, per_s=1000, seconds=60)
    steady(meter, clock, per_s=100, seconds=60)
    assert meter.rate(60).messages == pytest.approx(100, rel=0.05)
    assert meter.rate(120).messages == pytest.approx(550, rel=0.05)


def test_idle_meter_decays_to_zero() -> None:
    clock = FakeClock()
    meter = RateMeter(clock)
    steady(meter, clock, per_s=1000, seconds=10)
    clock.advance(30)
    half = meter.rate(60).messages  # 10 s of traffic in the last 60 s (meter 40 s old)
    assert half == pytest.approx(10_000 / 40, rel=0.05)
    clock.advance(31)
    assert meter.rate(60) == ZERO


def test_burst_after_long_idle_counts_over_the_window_only() -> None:
    clock = FakeClock()
    meter = RateMeter(clock)
    clock.advance(600)  # an old, idle meter
    steady(meter, clock, per_s=600, seconds=6)
    # 3,600 messages in the last 60 s: 60/s, not 3,600 / 606 s.
    assert meter.rate(60).messages == pytest.approx(60, rel=0.05)


def test_samples_stay_bounded() -> None:
    clock = FakeClock()
    meter = RateMeter(clock)
    for _ in range(MAX_SAMPLES * 4):
        clock.advance(1.5)
        meter.record(1)
    assert len(meter._samples) <= MAX_SAMPLES
    assert meter.rate(60).messages == pytest.approx(1 / 1.5, rel=0.05)
    # A window longer than the samples kept is measured over what is kept.
    assert meter.rate(10_000).messages == pytest.approx(1 / 1.5, rel=0.05)


def test_counters_are_cumulative() -> None:
    meter = RateMeter(FakeClock())
    meter.record(3, 30)
    meter.record(2, 20)
    assert (meter.messages, meter.bytes) == (5, 50)


def test_total_sums_rates() -> None:
    assert total([Rate(1, 10), Rate(2, 20)]) == Rate(3, 30)
    assert total([]) == ZERO


def test_connected_since_is_utc_to_the_second() -> None:
    assert iso_utc(0) == "1970-01-01T00:00:00Z"
    assert iso_utc(1_700_000_000.9) == "2023-11-14T22:13:20Z"
