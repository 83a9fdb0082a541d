"""The GIL switch interval follows the load: the busy interval from the CPU threshold on, the
light one again only clearly below it; the governor sets what the policy says."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from magnetar.broker.process import switch_interval_governor
from magnetar.broker.switch_interval import HYSTERESIS, SwitchIntervalPolicy, follow_load
from magnetar.standalone import StandaloneSettings


@pytest.fixture
def restore_interval() -> Iterator[None]:
    interval = sys.getswitchinterval()
    yield
    sys.setswitchinterval(interval)


def test_the_busy_interval_from_the_threshold_and_the_light_one_only_clearly_below() -> None:
    policy = SwitchIntervalPolicy(0.0002, 0.001, busy_from=0.7)
    assert policy.interval_s == 0.0002
    assert policy.step(0.69) is None  # light load: nothing to change
    assert policy.step(0.7) == 0.001
    assert policy.interval_s == 0.001
    assert policy.step(0.95) is None  # still busy
    assert policy.step(0.7 - HYSTERESIS / 2) is None  # at the line: no flip
    assert policy.step(0.7 - HYSTERESIS - 0.01) == 0.0002
    assert policy.step(0.5) is None


def test_the_same_two_intervals_start_no_governor() -> None:
    assert not SwitchIntervalPolicy(0.0002, 0.0002, busy_from=0.7).enabled
    settings = StandaloneSettings(gil_switch_interval_ms=0.5, gil_switch_interval_busy_ms=0.5)
    assert switch_interval_governor(settings) is None


def test_defaults_and_out_of_range_values() -> None:
    settings = StandaloneSettings()
    assert (settings.gil_switch_interval_busy_ms, settings.gil_switch_busy_cpu) == (1.0, 0.7)
    with pytest.raises(ValueError, match="gil_switch_interval_busy_ms"):
        StandaloneSettings(gil_switch_interval_busy_ms=0)
    with pytest.raises(ValueError, match="gil_switch_busy_cpu"):
        StandaloneSettings(gil_switch_busy_cpu=-1)


async def test_the_governor_takes_the_busy_interval_while_the_process_burns_cpu(
    restore_interval: None,
) -> None:
    policy = SwitchIntervalPolicy(0.0002, 0.003, busy_from=0.5)
    governor = asyncio.create_task(follow_load(policy, period_s=0.2))
    burning = threading.Event()
    stop = threading.Event()

    def burn() -> None:
        burning.set()
        while not stop.is_set():
            sum(range(1000))

    try:
        await asyncio.sleep(0.05)
        assert sys.getswitchinterval() == pytest.approx(0.0002)  # set at once: the light one
        thread = threading.Thread(target=burn, daemon=True)
        thread.start()
        deadline = time.monotonic() + 5
        while sys.getswitchinterval() != pytest.approx(0.003):
            assert time.monotonic() < deadline, "the busy interval was never set"
            await asyncio.sleep(0.05)
        stop.set()
        thread.join()
        while sys.getswitchinterval() != pytest.approx(0.0002):
            assert time.monotonic() < deadline, "the light interval did not come back"
            await asyncio.sleep(0.05)
    finally:
        stop.set()
        governor.cancel()
        await asyncio.wait([governor])
