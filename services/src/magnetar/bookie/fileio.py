"""Small blocking file helpers shared by the journal and the entry logs."""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import cast

_IOV_MAX = 1024  # buffers per writev call (Linux's limit)
_WRITEV_MIN_PART = 8192  # mean bytes per buffer from which writev beats one join + write
_REMOVE_STEP_BYTES = 4 << 20
REMOVE_PAUSE_S = 0.05  # remove_gradually's default pause between steps


def write_all(fd: int, parts: list[bytes], total: int = -1) -> int:
    """Write ``parts`` in order; return the bytes written. Big parts (payloads of batched
    entries) go out with ``writev``, ``_IOV_MAX`` buffers a call, never copied into one buffer;
    small ones are joined first (one copy is cheaper than many tiny iovecs), so that they take
    one ``write`` (one sync on an ``O_DSYNC`` descriptor). ``total``: their summed length when
    the caller knows it already (else counted here)."""
    if total < 0:
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


def replace_durably(path: Path, data: bytes) -> None:
    """Atomically replace ``path`` with ``data`` so that the new content survives a crash:
    write a temp file, fsync it, rename it over ``path``, fsync the directory."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


def _load_sync_file_range() -> Callable[[int, int, int, int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        func = libc.sync_file_range
    except (OSError, AttributeError):
        return None
    func.argtypes = (ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint)
    func.restype = ctypes.c_int
    return cast(Callable[[int, int, int, int], int], func)


_sync_file_range = _load_sync_file_range()
_SYNC_FILE_RANGE_WAIT_BEFORE = 1
_SYNC_FILE_RANGE_WRITE = 2
_SYNC_FILE_RANGE_WAIT_AFTER = 4


_PAGE_MASK = ~(os.sysconf("SC_PAGE_SIZE") - 1)


def page_floor(offset: int) -> int:
    """``offset`` rounded down to a page boundary."""
    return offset & _PAGE_MASK


def drop_cached_range(fd: int, start: int, length: int, *, write_back: bool = False) -> None:
    """Drop ``start`` .. ``start + length`` of the file (``length`` 0: to its end) from the
    page cache (``POSIX_FADV_DONTNEED``). The kernel skips a page that is dirty or under
    writeback, so ``write_back`` first writes the range's dirty pages and waits for them
    (``sync_file_range`` with WAIT_BEFORE | WRITE | WAIT_AFTER; not a durability point: the
    disk's cache is not flushed); where ``sync_file_range`` does not exist, only the advice is
    given. Without it, for a range known to be clean (synced)."""
    if write_back and _sync_file_range is not None:
        flags = _SYNC_FILE_RANGE_WAIT_BEFORE | _SYNC_FILE_RANGE_WRITE | _SYNC_FILE_RANGE_WAIT_AFTER
        if _sync_file_range(fd, start, length, flags) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"sync_file_range: {os.strerror(err)}")
    os.posix_fadvise(fd, start, length, os.POSIX_FADV_DONTNEED)


def start_writeback(fd: int) -> None:
    """Have the kernel start writing the file's dirty pages to disk, without waiting for them
    and without flushing the disk's cache: Linux's ``sync_file_range(SYNC_FILE_RANGE_WRITE)``,
    which RocksDB's ``bytes_per_sync`` uses too; ``fdatasync`` where that does not exist. Not a
    durability point (that is ``fdatasync``): it keeps the dirty backlog small, so that a later
    sync (the journal's, on every acknowledgement's path) does not queue behind a burst. An
    ``fdatasync`` per MiB measured the same here (publish p99 and batched throughput:
    docs/benchmarks.md, "Broker round 5"); this call is preferred because it neither waits
    nor asks the disk to flush its cache, which a durable sync does and writeback does not
    need."""
    if _sync_file_range is None:
        os.fdatasync(fd)
        return
    if _sync_file_range(fd, 0, 0, _SYNC_FILE_RANGE_WRITE) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"sync_file_range: {os.strerror(err)}")


def remove_gradually(
    path: Path,
    step_bytes: int = _REMOVE_STEP_BYTES,
    pause_s: float = REMOVE_PAUSE_S,
    stop: threading.Event | None = None,
) -> bool:
    """Delete a big file by shrinking it ``step_bytes`` at a time, pausing between steps.

    Blocking, and slow on purpose (64 MiB: about 0.8 s). Freeing a file's blocks all at once
    (one unlink of 64 MiB on ext4 mounted with ``discard``) stalled other files' fdatasync,
    once per journal segment, for longer than freeing it 4 MiB at a time does
    (``python -m tests.bench.delete_stalls``; docs/benchmarks.md, "Delete stalls"). A missing
    file is not an error. Once ``stop`` is set (the owner is closing) it gives up before the
    next step and returns False, leaving the (possibly shortened) file for a later removal;
    True when the file is gone."""
    if stop is None:
        stop = threading.Event()  # never set: each pause is a plain sleep
    try:
        size = path.stat().st_size
        while size > step_bytes:
            if stop.is_set():
                return False
            size -= step_bytes
            os.truncate(path, size)
            stop.wait(pause_s)
        if stop.is_set():
            return False
        path.unlink()
    except FileNotFoundError:
        pass
    return True
