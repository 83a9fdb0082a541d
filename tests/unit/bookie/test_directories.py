"""A bookie dir that cannot be written is refused at open, naming the dir and what to check."""

from __future__ import annotations

from pathlib import Path

import pytest

from magnetar.bookie.bookie import Bookie
from magnetar.bookie.config import BookieConfig
from magnetar.bookie.directories import ensure_writable
from magnetar.bookie.errors import StorageUnavailable


def test_a_writable_dir_is_created_and_left_clean(tmp_path: Path) -> None:
    ensure_writable(tmp_path / "journal", "journal")
    assert list((tmp_path / "journal").iterdir()) == []


async def test_a_journal_dir_that_cannot_be_made_stops_the_open(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_bytes(b"")  # a file where the journal's volume should be
    config = BookieConfig(data_dir=tmp_path / "data", journal_location=blocker / "journal")
    with pytest.raises(StorageUnavailable, match=f"the journal dir {blocker / 'journal'} is not"):
        await Bookie.open(config)
    assert not (tmp_path / "data" / "ledgers").exists()  # nothing opened
