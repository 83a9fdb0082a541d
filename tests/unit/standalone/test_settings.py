"""The standalone's bookie reads the bookie's journal and storage settings under the
standalone's own prefix; bad values are refused with the setting's name."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from magnetar.bookie.config import BookieConfig
from magnetar.bookie.journal import JournalConfig
from magnetar.standalone import StandaloneSettings


def test_bad_bookie_values_are_refused_with_their_names(tmp_path: Path) -> None:
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


def test_the_standalone_bookie_dirs_may_move_but_never_into_the_metadata_dir(
    tmp_path: Path,
) -> None:
    config = StandaloneSettings(
        data_dir=tmp_path / "d", journal_dir=tmp_path / "j"
    ).bookie_storage_config()
    assert (config.journal_dir, config.ledger_dir) == (
        tmp_path / "j",
        tmp_path / "d" / "bookie" / "ledgers",
    )
    # RocksDB's own numbered *.log files there would look like journal segments.
    with pytest.raises(ValidationError, match="overlaps the metadata dir"):
        StandaloneSettings(data_dir=tmp_path / "d", journal_dir=tmp_path / "d" / "metadata")
