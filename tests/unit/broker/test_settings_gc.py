"""The GC threshold setting reaches the collector; out-of-range values are refused by name."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from pydantic import ValidationError

from magnetar.broker.settings import StandaloneSettings
from magnetar.broker.standalone import tune_gc


@pytest.fixture
def restore_gc() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*before)


def test_gen0_threshold_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, restore_gc: None
) -> None:
    monkeypatch.setenv("MAGNETAR_STANDALONE_GC_GEN0_THRESHOLD", "25000")
    settings = StandaloneSettings()
    tune_gc(settings.gc_gen0_threshold)
    assert gc.get_threshold()[0] == 25_000
    assert gc.get_freeze_count() > 0


def test_default_and_too_small_threshold() -> None:
    assert StandaloneSettings().gc_gen0_threshold == 100_000
    with pytest.raises(ValidationError, match="gc_gen0_threshold"):
        StandaloneSettings(gc_gen0_threshold=10)
