"""Rate pacing: due times follow the rate; a stalled sender bursts at most max_burst."""

from __future__ import annotations

import pytest

from magnetar.tools.rate import Pacer, RateSchedule


def test_due_times_follow_the_rate() -> None:
    schedule = RateSchedule(rate=100.0, start=10.0)
    assert schedule.delay(10.0) == 0.0
    schedule.sent()
    assert schedule.delay(10.0) == pytest.approx(0.01)
    schedule.sent(9)
    assert schedule.intended_time() == pytest.approx(10.1)


def test_a_stall_slides_the_schedule_instead_of_bursting() -> None:
    schedule = RateSchedule(rate=1000.0, start=0.0, max_burst=10)
    # five seconds late: without sliding 5000 messages would be due at once
    assert schedule.delay(5.0) == 0.0
    burst = 0
    while schedule.delay(5.0) == 0.0:
        schedule.sent()
        burst += 1
    assert burst == 10


def test_bad_rates_are_refused() -> None:
    with pytest.raises(ValueError, match="rate must be > 0"):
        RateSchedule(rate=0, start=0.0)


async def test_pacer_holds_the_rate_on_a_fake_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]
    sleeps: list[float] = []

    async def fake_sleep(delay: float) -> None:
        sleeps.append(delay)
        now[0] += delay

    monkeypatch.setattr("magnetar.tools.rate.asyncio.sleep", fake_sleep)
    pacer = Pacer(100.0, clock=lambda: now[0])  # one message every 10 ms
    for _ in range(10):
        await pacer.wait()
    assert len(sleeps) == 9  # the first message is due at once
    assert now[0] == pytest.approx(0.09)  # ten messages span nine intervals
    fast = Pacer(1_000_000.0, clock=lambda: now[0])  # 1 µs apart: below the 1 ms sleep floor
    for _ in range(100):
        await fast.wait()
    unlimited = Pacer(None, clock=lambda: now[0])
    for _ in range(100):
        await unlimited.wait()
    assert len(sleeps) == 9  # neither slept
