"""The file helpers the journal and the entry logs write with."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from magnetar.bookie import fileio
from magnetar.bookie.fileio import start_writeback, write_all


@pytest.mark.parametrize("part_size", [10, 20_000])
def test_group_write_is_the_parts_in_order(tmp_path: Path, part_size: int) -> None:
    """Small parts are joined, big ones go out with writev (more than one call's worth here):
    the file holds exactly the parts, in order."""
    parts = [
        bytes([i % 251]) * (part_size + i % 7) for i in range(2500 if part_size < 100 else 1100)
    ]
    fd = os.open(tmp_path / "seg", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        assert write_all(fd, parts) == sum(len(p) for p in parts)
    finally:
        os.close(fd)
    assert (tmp_path / "seg").read_bytes() == b"".join(parts)


def test_start_writeback_accepts_a_file_and_refuses_a_bad_fd(tmp_path: Path) -> None:
    fd = os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT)
    try:
        os.write(fd, b"x" * 100_000)
        start_writeback(fd)  # the real call (sync_file_range on Linux): no error
    finally:
        os.close(fd)
    with pytest.raises(OSError):
        start_writeback(fd)  # closed


class _RecordsSizeAtEachPause(threading.Event):
    """A stop event that is never set and, at each pause, records the file's size."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.sizes: list[int] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.sizes.append(self.path.stat().st_size)
        return False


def test_remove_gradually_shrinks_step_by_step(tmp_path: Path) -> None:
    path = tmp_path / "segment"
    path.write_bytes(b"s" * 10_000)
    pauses = _RecordsSizeAtEachPause(path)
    assert fileio.remove_gradually(path, step_bytes=4_000, stop=pauses)
    assert pauses.sizes == [6_000, 2_000]
    assert not path.exists()
    fileio.remove_gradually(path)  # already gone: no error
    path.write_bytes(b"s" * 10_000)
    assert fileio.remove_gradually(path, step_bytes=4_000, pause_s=0)  # no stop event given
    assert not path.exists()


class _StopsDuringFirstPause(threading.Event):
    """A stop event that is set while the removal pauses after its first step."""

    def wait(self, timeout: float | None = None) -> bool:
        self.set()
        return True


def test_remove_gradually_gives_up_once_stopped_and_leaves_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "segment"
    path.write_bytes(b"s" * 10_000)
    assert fileio.remove_gradually(path, step_bytes=4_000, stop=_StopsDuringFirstPause()) is False
    assert path.stat().st_size == 6_000  # one step done, the rest left for a later removal
    stopped = threading.Event()
    stopped.set()
    assert fileio.remove_gradually(path, step_bytes=4_000, stop=stopped) is False
    assert path.stat().st_size == 6_000
    assert fileio.remove_gradually(path, step_bytes=4_000, pause_s=0, stop=threading.Event())
    assert not path.exists()


def test_replace_durably_swaps_the_content_and_leaves_no_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "lastMark"
    fileio.replace_durably(path, b"one")
    fileio.replace_durably(path, b"two")
    assert path.read_bytes() == b"two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lastMark"]
