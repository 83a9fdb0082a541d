"""The interpreter settings (GC threshold, GIL switch interval) reach CPython; out-of-range
values are refused by name."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator

import pytest
from pydantic import ValidationError

from magnetar.broker.process import freeze_startup_objects, tune_interpreter
from magnetar.standalone import StandaloneSettings


@pytest.fixture
def restore_interpreter() -> Iterator[None]:
    threshold = gc.get_threshold()
    interval = sys.getswitchinterval()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)
    sys.setswitchinterval(interval)


def test_settings_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, restore_interpreter: None
) -> None:
    monkeypatch.setenv("MAGNETAR_STANDALONE_GC_GEN0_THRESHOLD", "25000")
    monkeypatch.setenv("MAGNETAR_STANDALONE_GIL_SWITCH_INTERVAL_MS", "0.5")
    tune_interpreter(StandaloneSettings())
    assert gc.get_threshold()[0] == 25_000
    assert sys.getswitchinterval() == pytest.approx(0.0005)
    frozen = gc.get_freeze_count()
    assert frozen > 0
    made_later = [[] for _ in range(1000)]  # tracked containers built after start-up
    freeze_startup_objects()
    assert gc.get_freeze_count() >= frozen + len(made_later)


def test_defaults_and_out_of_range_values() -> None:
    settings = StandaloneSettings()
    assert settings.gc_gen0_threshold == 100_000
    assert settings.gil_switch_interval_ms == 0.2
    with pytest.raises(ValidationError, match="gc_gen0_threshold"):
        StandaloneSettings(gc_gen0_threshold=10)
    with pytest.raises(ValidationError, match="gil_switch_interval_ms"):
        StandaloneSettings(gil_switch_interval_ms=0)
