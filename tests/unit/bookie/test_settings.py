"""The bookie's settings reach its config; bad values are refused with the setting's name."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from magnetar.bookie.config import BookieConfig
from magnetar.bookie.journal import JournalConfig
from magnetar.bookie.settings import BookieSettings
from magnetar.broker.settings import StandaloneSettings


def test_entry_log_and_compaction_settings_reach_the_bookie_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MAGNETAR_BOOKIE_COMPACTION_THRESHOLD", "0.3")
    settings = BookieSettings(
        data_dir=tmp_path,
        metadata_url="memory://",
        entry_log_size_limit=64 << 20,
        compaction_rate_by_bytes=1 << 20,
    )
    config = settings.bookie_config()
    assert (
        config.entry_log_size_limit,
        config.compaction_threshold,
        config.compaction_rate_by_bytes,
    ) == (64 << 20, 0.3, 1 << 20)


def test_bad_values_are_refused_with_their_names(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="compaction_threshold"):
        BookieSettings(data_dir=tmp_path, metadata_url="memory://", compaction_threshold=1.5)
    with pytest.raises(ValidationError, match="entry_log_size_limit"):
        BookieSettings(data_dir=tmp_path, metadata_url="memory://", entry_log_size_limit=1000)
    with pytest.raises(ValidationError, match="compaction_rate_by_bytes"):
        StandaloneSettings(data_dir=tmp_path, compaction_rate_by_bytes=0)


def test_the_standalone_bookie_reads_the_same_settings_under_its_own_prefix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MAGNETAR_STANDALONE_ENTRY_LOG_SIZE_LIMIT", str(8 << 20))
    monkeypatch.setenv("MAGNETAR_STANDALONE_JOURNAL_MAX_GROUP_WAIT_MS", "0")
    monkeypatch.setenv("MAGNETAR_BOOKIE_COMPACTION_THRESHOLD", "0.9")  # not the standalone's
    config = StandaloneSettings(data_dir=tmp_path).storage_config(tmp_path / "bookie")
    assert config == BookieConfig(
        data_dir=tmp_path / "bookie",
        journal=JournalConfig(sync=True, max_group_wait_ms=0.0),
        entry_log_size_limit=8 << 20,
    )


def test_the_bookie_config_keeps_every_bookie_setting(tmp_path: Path) -> None:
    settings = BookieSettings(
        data_dir=tmp_path,
        metadata_url="memory://",
        journal_sync=False,
        journal_segment_bytes=1 << 20,
        read_only=True,
        gc_interval_s=7.0,
    )
    config = settings.bookie_config()
    assert config.journal == JournalConfig(sync=False, segment_bytes=1 << 20)
    assert (config.force_read_only, config.gc_interval_s) == (True, 7.0)
