"""The write-behind buffers of a direct entry log: hand-offs, the carried block, reads."""

from __future__ import annotations

import os

import pytest

from magnetar.bookie.block_writes import BLOCK
from magnetar.bookie.write_behind import WriteBehind


def test_a_hand_off_pads_to_a_block_and_carries_the_last_partial_block() -> None:
    behind = WriteBehind(64 * 1024)
    data = os.urandom(5000)
    try:
        behind.append([data[:1000], data[1000:]], 5000)
        assert (behind.end, behind.pending, behind.written_to) == (5000, 5000, 0)
        out = behind.hand_off()
        assert (out.base, out.end, len(out.view)) == (0, 5000, 2 * BLOCK)
        assert bytes(out.view[:5000]) == data
        assert bytes(out.view[5000:]) == bytes(2 * BLOCK - 5000)  # zeros, not stale bytes
        # The block the end falls in starts the other buffer: the next write-out rewrites it.
        assert behind.active_base == BLOCK
        assert behind.active_bytes == 5000 - BLOCK
        with pytest.raises(AssertionError):
            behind.hand_off()  # one buffer out at a time
        more = os.urandom(3000)
        behind.append([more], 3000)
        # Nothing written yet: the out buffer and the active one answer every byte.
        assert behind.read(0, 8000) == data + more
        assert behind.read(4000, 6000) == (data + more)[4000:6000]
        behind.written()
        assert (behind.written_to, behind.pending, behind.out) == (5000, 3000, None)
        assert behind.read(5000, 8000) == more
        second = behind.hand_off()
        assert (second.base, second.end, len(second.view)) == (BLOCK, 8000, BLOCK)
        assert bytes(second.view[: 8000 - BLOCK]) == (data + more)[BLOCK:]
        behind.written()
        behind.append([b"t" * 10], 10)  # into the first buffer again, stale bytes and all
        third = behind.hand_off()
        used = 8010 - BLOCK
        assert bytes(third.view[:used]) == (data + more)[BLOCK:] + b"t" * 10
        assert bytes(third.view[used:]) == bytes(BLOCK - used)  # zeros past the end
    finally:
        behind.close()


def test_a_hand_off_on_a_block_boundary_carries_nothing() -> None:
    behind = WriteBehind(64 * 1024)
    try:
        behind.append([b"b" * (2 * BLOCK)], 2 * BLOCK)
        out = behind.hand_off()
        assert len(out.view) == 2 * BLOCK
        assert (behind.active_base, behind.active_bytes) == (2 * BLOCK, 0)
        behind.written()
        behind.append([b"c"], 1)
        assert behind.read(2 * BLOCK, 2 * BLOCK + 1) == b"c"
    finally:
        behind.close()


def test_a_write_bigger_than_the_buffer_grows_it_and_keeps_what_it_holds() -> None:
    behind = WriteBehind(BLOCK)
    first, big = os.urandom(100), os.urandom(5 * BLOCK + 7)
    try:
        assert behind.room() == BLOCK
        behind.append([first], len(first))
        behind.append([big], len(big))
        assert behind.read(0, behind.end) == first + big
        out = behind.hand_off()  # the smaller spare is replaced too
        assert bytes(out.view[: out.end]) == first + big
        behind.written()
        tail = os.urandom(6 * BLOCK)
        behind.append([tail], len(tail))
        assert behind.read(out.end, behind.end) == tail
    finally:
        behind.close()


def test_start_resets_for_a_new_log() -> None:
    behind = WriteBehind(BLOCK)
    try:
        behind.append([b"x" * 10], 10)
        behind.hand_off()
        with pytest.raises(AssertionError):
            behind.start()  # the previous log's buffer is not written yet
        behind.written()
        behind.start()
        assert (behind.end, behind.active_base, behind.written_to) == (0, 0, 0)
        behind.append([b"y"], 1)
        assert behind.read(0, 1) == b"y"
    finally:
        behind.close()
