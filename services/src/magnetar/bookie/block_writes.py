"""Appends through ``O_DIRECT``: whole blocks from an aligned buffer, the last block rewritten.

The journal writes its segments ``O_DIRECT | O_DSYNC`` where the filesystem allows it: a
group's bytes go from this buffer to the device, with no copy into the page cache and no page
cache pages to allocate, write back and drop again (docs/storage.md, "The journal's write").

``O_DIRECT`` wants the buffer's address, the file offset and the length aligned to the device's
logical block: :data:`BLOCK` (4 KiB) suits devices of 512-byte and of 4 KiB blocks, and an
anonymous ``mmap`` is page aligned. Records do not end on a block boundary, so each write starts
at the block that holds the end of what is written: the bytes already in that block (kept here
as the tail) go first, then the new bytes, then zeros to the next boundary. What the file holds
afterwards is what buffered appends leave (the bytes, then zeros, which the segment scan reads
as the end), so the format does not change; and the device sees the same rewrite of a partly
filled block that the page cache's writeback of a partly filled page gives it.

Blocking file I/O for one writer thread; the copy into the buffer holds the GIL (at most a
group's bytes, ``JournalConfig.max_group_bytes``).
"""

from __future__ import annotations

import errno
import mmap
import os
from pathlib import Path

BLOCK = 4096
_JOIN_BELOW = 8192  # mean bytes per part under which the parts are joined first (one copy)


def open_direct(path: Path, flags: int, mode: int = 0o644) -> tuple[int, bool]:
    """Open ``path`` with ``O_DIRECT`` added to ``flags`` where the platform and the
    filesystem allow it (tmpfs does not: EINVAL), else without; the descriptor and whether
    it is direct."""
    direct = getattr(os, "O_DIRECT", 0)
    if direct:
        try:
            return os.open(path, flags | direct, mode), True
        except OSError as exc:
            if exc.errno != errno.EINVAL:
                raise
    return os.open(path, flags, mode), False


def _aligned(size: int) -> int:
    return -(-size // BLOCK) * BLOCK


class BlockWriter:
    """Appends to one file at a time through an ``O_DIRECT`` descriptor; see the module
    docstring. :meth:`start` at each new file, then :meth:`append` the bytes in order."""

    def __init__(self, capacity: int, zeros: int = 0) -> None:
        self._buffer = mmap.mmap(-1, _aligned(capacity) + BLOCK)
        self._zeros = mmap.mmap(-1, _aligned(max(zeros, BLOCK)))  # never written: all zeros
        self._tail = b""  # what the file holds of the block its end is in

    def start(self, path: Path, offset: int) -> None:
        """A file whose bytes end at ``offset`` (0 for a new one): its last partial block is
        read back (buffered), as the next append rewrites it."""
        head = offset % BLOCK
        self._tail = b""
        if head:
            with path.open("rb") as handle:
                handle.seek(offset - head)
                self._tail = handle.read(head)
            if len(self._tail) != head:
                raise OSError(errno.EIO, f"{path} is shorter than {offset} bytes")

    def append(self, fd: int, offset: int, parts: list[bytes], size: int) -> int:
        """Write ``parts`` (``size`` bytes) at ``offset``, the current end: from the start of
        its block to the next block boundary. Returns the file offset the write reached (the
        zeros after the bytes included). A short write raises (the caller's write failed)."""
        start = offset - len(self._tail)
        end = len(self._tail) + size
        padded = _aligned(end)
        if padded > len(self._buffer):
            self._buffer.close()
            self._buffer = mmap.mmap(-1, padded + BLOCK)
        view = memoryview(self._buffer)
        try:
            head = len(self._tail)
            view[:head] = self._tail
            if size < _JOIN_BELOW * len(parts):
                view[head:end] = b"".join(parts)
            else:
                at = head
                for part in parts:
                    view[at : at + len(part)] = part
                    at += len(part)
            view[end:padded] = bytes(padded - end)
            written = os.pwrite(fd, view[:padded], start)
            if written != padded:
                raise OSError(errno.EIO, f"short direct write: {written} of {padded} bytes")
            last = end - end % BLOCK
            self._tail = bytes(view[last:end])
        finally:
            view.release()
        return start + padded

    def zeros(self, size: int) -> memoryview:
        """``size`` zero bytes in an aligned buffer (``size`` a multiple of :data:`BLOCK`, at
        most the ``zeros`` the writer was built with)."""
        return memoryview(self._zeros)[:size]

    def close(self) -> None:
        self._buffer.close()
        self._zeros.close()
