"""The journal's O_DIRECT appends (magnetar.bookie.block_writes) against plain appends."""

from __future__ import annotations

import errno
import fcntl
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from magnetar.bookie.block_writes import BLOCK, BlockWriter, open_direct
from tests.kit.page_cache import refuse_o_direct, supports_direct_io

pytestmark = pytest.mark.skipif(
    not supports_direct_io(Path(tempfile.gettempdir())), reason="the temp dir refuses O_DIRECT"
)
_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_DSYNC


def _direct(path: Path) -> int:
    fd, direct = open_direct(path, _FLAGS)
    assert direct
    return fd


def _aligned(n: int) -> int:
    return -(-n // BLOCK) * BLOCK


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.lists(st.binary(min_size=0, max_size=9000), min_size=1, max_size=6),
        min_size=1,
        max_size=8,
    )
)
def test_appends_leave_the_bytes_then_zeros_to_the_block(groups: list[list[bytes]]) -> None:
    """Whatever the sizes (parts joined or copied one by one, groups ending mid-block or on a
    boundary, groups bigger than the buffer), the file holds exactly the bytes appended, then
    zeros to the next block boundary, and each append reports that boundary."""
    with tempfile.TemporaryDirectory() as name:
        path = Path(name) / "segment"
        fd = _direct(path)
        writer = BlockWriter(capacity=8192)
        writer.start(path, 0)
        offset = 0
        try:
            for parts in groups:
                size = sum(map(len, parts))
                reached = writer.append(fd, offset, parts, size)
                offset += size
                assert reached == _aligned(offset) or (size == 0 and reached >= offset)
        finally:
            os.close(fd)
        data = path.read_bytes()
        expected = b"".join(b"".join(parts) for parts in groups)
        assert data[: len(expected)] == expected
        assert data[len(expected) :] == bytes(len(data) - len(expected))
        assert len(data) == _aligned(len(expected))


def test_a_file_with_a_partial_last_block_keeps_its_bytes(tmp_path: Path) -> None:
    """``start`` reads back the last partial block of what a file holds: the next append
    rewrites that block with those bytes in front."""
    path = tmp_path / "segment"
    before = os.urandom(BLOCK + 1000)
    path.write_bytes(before)
    fd = _direct(path)
    writer = BlockWriter(capacity=BLOCK)
    try:
        writer.start(path, len(before))
        reached = writer.append(fd, len(before), [b"a" * 10, b"b" * 20], 30)
    finally:
        os.close(fd)
    assert reached == 2 * BLOCK
    data = path.read_bytes()
    assert data[: len(before) + 30] == before + b"a" * 10 + b"b" * 20
    assert data[len(before) + 30 :] == bytes(2 * BLOCK - len(before) - 30)


def test_a_file_shorter_than_its_offset_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "segment"
    path.write_bytes(b"x" * 100)
    with pytest.raises(OSError, match="shorter than 200 bytes"):
        BlockWriter(capacity=BLOCK).start(path, 200)


def test_a_short_write_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "segment"
    fd = _direct(path)
    writer = BlockWriter(capacity=BLOCK)
    writer.start(path, 0)
    real = os.pwrite
    monkeypatch.setattr(os, "pwrite", lambda f, data, at: real(f, data[:BLOCK], at) // 2)
    try:
        with pytest.raises(OSError, match="short direct write"):
            writer.append(fd, 0, [b"z" * (3 * BLOCK)], 3 * BLOCK)
    finally:
        os.close(fd)


def test_zeros_are_aligned_zero_bytes(tmp_path: Path) -> None:
    path = tmp_path / "segment"
    fd = _direct(path)
    writer = BlockWriter(capacity=BLOCK, zeros=4 * BLOCK)
    try:
        with writer.zeros(4 * BLOCK) as zeros:
            assert os.pwrite(fd, zeros, BLOCK) == 4 * BLOCK
    finally:
        os.close(fd)
    assert path.read_bytes() == bytes(5 * BLOCK)


def test_open_direct_falls_back_where_the_filesystem_refuses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refuse_o_direct(monkeypatch)
    fd, direct = open_direct(tmp_path / "segment", _FLAGS)
    try:
        assert not direct
        assert fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_DSYNC
    finally:
        os.close(fd)


def test_open_direct_raises_what_is_not_about_o_direct(tmp_path: Path) -> None:
    with pytest.raises(OSError) as caught:
        open_direct(tmp_path / "missing" / "segment", _FLAGS)
    assert caught.value.errno == errno.ENOENT
