"""The tail of an entry log written ``O_DIRECT`` behind the appends: two aligned buffers.

An append is copied into the *active* buffer and is readable from it at once; a writeback
thread writes a buffer out as whole blocks while the appender goes on filling the other
(BookKeeper's write cache, which its ledger storage flushes in the background). So the
entry-log write, which the journal's writer thread does for every group before the group is
acknowledged, costs a copy and no wait for the device, and the bytes never pass through the
page cache (docs/storage.md, "Entry logs written behind").

Offsets are file offsets. The active buffer starts at a block boundary (``active_base``) and
holds every byte from there to the log's end; when it is handed off, the block its end falls in
is copied to the start of the other buffer, which becomes the active one, so the next write-out
rewrites that block whole (as :class:`~magnetar.bookie.block_writes.BlockWriter` does). Every
byte below :attr:`WriteBehind.written_to` is in the file; every byte from there to the end is in
the buffer handed off (until it is written) or in the active one.

Pure bookkeeping over two ``mmap`` buffers: no locks, no threads, no files. The entry log
calls it under its lock and does the ``pwrite`` of :meth:`WriteBehind.hand_off`'s buffer
outside it (the buffer handed off is not touched until :meth:`WriteBehind.written`).
"""

from __future__ import annotations

import mmap
from typing import NamedTuple

from magnetar.bookie.block_writes import BLOCK

_JOIN_BELOW = 8192  # mean bytes per part under which the parts are joined first (one copy)


def _aligned(size: int) -> int:
    return -(-size // BLOCK) * BLOCK


class OutBuffer(NamedTuple):
    """A buffer handed off for writing: ``view`` (whole blocks, zeros after the last byte)
    goes at ``base``; the log's bytes in it end at ``end``."""

    view: memoryview
    base: int
    end: int


class WriteBehind:
    """The two buffers of one log's tail; see the module docstring."""

    def __init__(self, capacity: int) -> None:
        size = _aligned(capacity) + BLOCK
        self._active = mmap.mmap(-1, size)
        self._spare = mmap.mmap(-1, size)
        self._out: OutBuffer | None = None
        self.active_base = 0
        self._active_len = 0  # bytes of the log in the active buffer
        self.written_to = 0

    def start(self) -> None:
        """A new, empty log (nothing may be handed off and not yet written)."""
        assert self._out is None, "a buffer of the previous log is still being written"
        self.active_base = self._active_len = self.written_to = 0

    @property
    def end(self) -> int:
        """The log's end: the offset of the next append."""
        return self.active_base + self._active_len

    @property
    def pending(self) -> int:
        """Bytes appended and not yet in the file."""
        return self.end - self.written_to

    @property
    def active_bytes(self) -> int:
        """Bytes appended since the last hand-off (the partly filled block carried over
        included)."""
        return self._active_len

    @property
    def out(self) -> OutBuffer | None:
        """The buffer handed off and not yet written, if any."""
        return self._out

    def room(self) -> int:
        """Bytes the active buffer can take before it must be handed off."""
        return len(self._active) - BLOCK - self._active_len

    def append(self, parts: list[bytes], size: int) -> None:
        """Copy ``parts`` (``size`` bytes) to the log's end; a buffer too small for them is
        replaced by a bigger one first (the caller hands off before that when it can)."""
        if size > self.room():
            self._grow(self._active_len + size)
        at = self._active_len
        view = memoryview(self._active)
        try:
            if size < _JOIN_BELOW * len(parts):
                view[at : at + size] = b"".join(parts)
            else:
                for part in parts:
                    view[at : at + len(part)] = part
                    at += len(part)
        finally:
            view.release()
        self._active_len += size

    def hand_off(self) -> OutBuffer:
        """Hand the active buffer off for writing (nothing else may be handed off): its bytes
        padded with zeros to the next block boundary. The other buffer becomes the active
        one, starting with the block the end falls in."""
        assert self._out is None, "a buffer is already handed off"
        length = self._active_len
        padded = _aligned(length)
        old = self._active
        old[length:padded] = bytes(padded - length)
        carried = length % BLOCK
        full = length - carried
        self._active, self._spare = self._spare, old
        if len(self._active) < len(old):
            self._active.close()
            self._active = mmap.mmap(-1, len(old))
        if carried:
            self._active[:carried] = old[full:length]
        base = self.active_base
        self.active_base = base + full
        self._active_len = carried
        self._out = OutBuffer(memoryview(old)[:padded], base, base + length)
        return self._out

    def written(self) -> None:
        """The buffer handed off is in the file."""
        assert self._out is not None
        self._out.view.release()
        self.written_to = self._out.end
        self._out = None

    def read(self, start: int, end: int) -> bytes:
        """The log's bytes ``[start, end)``, all of them at or past :attr:`written_to` and
        before :attr:`end`, from the buffers."""
        assert self.written_to <= start <= end <= self.end
        pieces = []
        out = self._out
        if out is not None and start < self.active_base:
            upto = min(end, self.active_base)
            pieces.append(out.view[start - out.base : upto - out.base].tobytes())
            start = upto
        if start < end:
            base = self.active_base
            pieces.append(self._active[start - base : end - base])
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)

    def _grow(self, size: int) -> None:
        bigger = mmap.mmap(-1, _aligned(size) + BLOCK)
        bigger[: self._active_len] = self._active[: self._active_len]
        self._active.close()
        self._active = bigger

    def close(self) -> None:
        if self._out is not None:
            self._out.view.release()
            self._out = None
        self._active.close()
        self._spare.close()
