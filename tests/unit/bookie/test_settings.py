"""The bookie's settings reach its config; bad values are refused with the setting's name."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from magnetar.bookie.journal import JournalConfig
from magnetar.bookie.settings import BookieSettings


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


def test_journal_and_ledger_dirs_default_under_the_data_dir_or_go_where_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    default = BookieSettings(data_dir=tmp_path / "d", metadata_url="memory://").bookie_config()
    assert (default.journal_dir, default.ledger_dir) == (
        tmp_path / "d" / "journal",
        tmp_path / "d" / "ledgers",
    )
    monkeypatch.setenv("MAGNETAR_BOOKIE_JOURNAL_DIR", str(tmp_path / "fast" / "journal"))
    moved = BookieSettings(
        data_dir=tmp_path / "d", metadata_url="memory://", ledger_dir=tmp_path / "big"
    ).bookie_config()
    assert (moved.journal_dir, moved.ledger_dir) == (
        tmp_path / "fast" / "journal",
        tmp_path / "big",
    )


@pytest.mark.parametrize(
    ("journal", "ledgers", "problem"),
    [
        ("j", "j", "the journal dir and the ledger dir are the same"),
        ("l/entrylogs", "l", "the journal dir .* lies inside the ledger dir"),
        ("j", "j/ledgers", "the ledger dir .* lies inside the journal dir"),
        ("d", None, "the journal dir is the data dir itself"),
        ("", None, "the data dir .* lies inside the journal dir"),
    ],
)
def test_a_layout_that_cannot_work_is_refused_saying_why(
    tmp_path: Path, journal: str, ledgers: str | None, problem: str
) -> None:
    with pytest.raises(ValidationError, match=problem):
        BookieSettings(
            data_dir=tmp_path / "d",
            metadata_url="memory://",
            journal_dir=tmp_path / journal,
            ledger_dir=None if ledgers is None else tmp_path / ledgers,
        )
