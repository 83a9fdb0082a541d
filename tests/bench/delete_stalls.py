"""Micro-benchmark: does deleting a big file stall another file's fdatasync? (not a test)

Run: ``.venv/bin/python -m tests.bench.delete_stalls [--dir D] [--deletes 6] [--size-mib 64]``

One thread does what the journal does: small writes (20 KiB), each followed by ``fdatasync``,
every 2 ms. Another thread creates files of ``--size-mib`` (written and fsynced, as a finished
journal segment is) and deletes each one a second later, first with one ``unlink`` and then with
:func:`magnetar.bookie.fileio.remove_gradually`. For each way it prints the slowest fdatasync in
the 1.2 s after each delete began, and the sample's p50/p99 over the whole run. On ext4 mounted
with ``discard`` one unlink of a big file stalled the other file's fdatasync for longer than
the gradual removal did (figures: docs/benchmarks.md, "Delete stalls"). Point ``--dir`` at the
disk under test: the default is a temporary directory on the one ``tempfile`` picks.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from magnetar.bookie.fileio import remove_gradually
from tests.bench.report import header, percentile

_WRITE = 20 * 1024
_PAUSE_S = 0.002
_AFTER_DELETE_S = 1.2


def run(directory: Path, remove: Callable[[Path], object], deletes: int, size: int) -> str:
    stop = threading.Event()
    deleted_at: list[float] = []

    def deleter() -> None:
        block = os.urandom(1 << 20)
        for i in range(deletes):
            path = directory / f"segment-{i}"
            with open(path, "wb") as f:
                for _ in range(size >> 20):
                    f.write(block)
                f.flush()
                os.fsync(f.fileno())
            time.sleep(1.0)
            deleted_at.append(time.perf_counter())
            remove(path)
            time.sleep(1.0)
        stop.set()

    thread = threading.Thread(target=deleter, daemon=True)
    thread.start()
    fd = os.open(directory / "journal", os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND)
    payload = os.urandom(_WRITE)
    syncs: list[tuple[float, float]] = []
    try:
        while not stop.is_set():
            os.write(fd, payload)
            started = time.perf_counter()
            os.fdatasync(fd)
            syncs.append((started, time.perf_counter() - started))
            time.sleep(_PAUSE_S)
    finally:
        os.close(fd)
        (directory / "journal").unlink()
    thread.join()
    worst = [
        max((d for at, d in syncs if t <= at <= t + _AFTER_DELETE_S), default=0.0) * 1e3
        for t in deleted_at
    ]
    ordered = sorted(d for _, d in syncs)
    return (
        f"slowest fdatasync after each delete: {', '.join(f'{w:.1f}' for w in worst)} ms; "
        f"all {len(ordered)} syncs: p50 {percentile(ordered, 0.5) * 1e3:.2f} ms "
        f"p99 {percentile(ordered, 0.99) * 1e3:.2f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--dir", type=Path, default=None, help="where to write (default: a temp dir)"
    )
    parser.add_argument("--deletes", type=int, default=6, help="files deleted per way")
    parser.add_argument("--size-mib", type=int, default=64, help="size of each deleted file")
    args = parser.parse_args()
    print(header(vars(args) | {"write_bytes": _WRITE, "pause_s": _PAUSE_S}), flush=True)
    with tempfile.TemporaryDirectory(prefix="delete-stalls-", dir=args.dir) as tmp:
        size = args.size_mib << 20
        ways: list[tuple[str, Callable[[Path], object]]] = [
            ("unlink", Path.unlink),
            ("remove_gradually", remove_gradually),
        ]
        for name, remove in ways:
            print(f"{name:>16}: {run(Path(tmp), remove, args.deletes, size)}", flush=True)


if __name__ == "__main__":
    main()
