"""How much of a file the page cache holds, as util-linux's ``fincore`` reports it, whether
this filesystem drops pages at all (tmpfs keeps them), and whether it takes ``O_DIRECT``
(tmpfs does not): for tests of what the bookie drops and of writes that bypass the cache."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

import pytest

HAVE_FINCORE = shutil.which("fincore") is not None


def resident_bytes(paths: Iterable[Path]) -> int:
    """Bytes of ``paths`` in the page cache, summed."""
    names = [str(path) for path in paths]
    if not names:
        return 0
    out = subprocess.run(
        ["fincore", "--bytes", "--noheadings", "--output", "RES", *names],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return sum(int(line.split()[0]) for line in out.splitlines() if line.strip())


def drops_pages(directory: Path) -> bool:
    """Whether a synced file's pages leave the page cache when dropped, in ``directory``."""
    probe = directory / "page-cache-probe"
    probe.write_bytes(b"p" * (1 << 20))
    fd = os.open(probe, os.O_RDONLY)
    try:
        os.fdatasync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return resident_bytes([probe]) == 0
    finally:
        os.close(fd)
        probe.unlink()


def supports_direct_io(directory: Path) -> bool:
    """Whether files in ``directory`` open with ``O_DIRECT``."""
    flag = getattr(os, "O_DIRECT", 0)
    if not flag:
        return False
    probe = directory / "direct-io-probe"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | flag, 0o644)
    except OSError:
        return False
    os.close(fd)
    probe.unlink()
    return True


def refuse_o_direct(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``os.open`` answer ``O_DIRECT`` as a filesystem without it does (EINVAL)."""
    real = os.open
    flag = getattr(os, "O_DIRECT", 0)

    def without(path: str | os.PathLike[str], flags: int, mode: int = 0o777) -> int:
        if flags & flag:
            raise OSError(errno.EINVAL, "Invalid argument")
        return real(path, flags, mode)

    monkeypatch.setattr(os, "open", without)
