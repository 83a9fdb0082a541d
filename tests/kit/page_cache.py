"""How much of a file the page cache holds, as util-linux's ``fincore`` reports it, and whether
this filesystem drops pages at all (tmpfs keeps them): for tests of what the bookie drops."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

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
