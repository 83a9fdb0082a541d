"""Small blocking file helpers shared by the journal and the entry logs."""

from __future__ import annotations

import os
from pathlib import Path

_IOV_MAX = 1024  # buffers per writev call (Linux's limit)
_WRITEV_MIN_PART = 8192  # mean bytes per buffer from which writev beats one join + write


def write_all(fd: int, parts: list[bytes]) -> int:
    """Write ``parts`` in order; return the bytes written. Big parts (payloads of batched
    entries) go out with ``writev``, ``_IOV_MAX`` buffers a call, never copied into one buffer;
    small ones are joined first (one copy is cheaper than many tiny iovecs)."""
    total = sum(map(len, parts))
    if total < _WRITEV_MIN_PART * len(parts):
        _write_fully(fd, memoryview(b"".join(parts)))
        return total
    for start in range(0, len(parts), _IOV_MAX):
        chunk = parts[start : start + _IOV_MAX]
        written = os.writev(fd, chunk)
        if written < sum(map(len, chunk)):  # a short write (rare): finish this chunk plainly
            _write_fully(fd, memoryview(b"".join(chunk))[written:])
    return total


def _write_fully(fd: int, view: memoryview) -> None:
    while view:
        view = view[os.write(fd, view) :]


def fsync_dir(directory: Path) -> None:
    """Make the directory's entries (files created, renamed, removed) durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
