"""Micro-benchmark: an ``O_DSYNC`` write that grows a file against one over blocks it has.

Usage::

    python -m tests.bench.dsync_overwrite [--writes 2000] [--size 5200] [--rounds 3] [--dir DIR]

Why the journal keeps its segment zero-filled ahead of the last record
(``JournalConfig.prealloc_bytes``): a write past a file's end makes its sync carry metadata as
well (the new size and blocks; on ext4 a commit of the filesystem's own journal), one over
blocks already written and synced carries the data alone. Each round writes ``--writes``
records of ``--size`` bytes (a paced journal group is a few KiB) one after another through an
``O_DSYNC`` descriptor to a new file, once appending and once over 16 MiB of zeros written and
synced beforehand, and prints the write latency p50 / p99 and the CPU per write (user and
system, of this process). The two cases alternate, round by round. The directory decides what
is measured: give one on the disk the journal would use (default: the temp dir). Not a test:
the figures go to docs/benchmarks.md ("The journal's preallocated segment").
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from tests.bench.report import header, percentile

_ZEROS = bytes(1 << 20)


def one_case(directory: Path, writes: int, size: int, *, over_zeros: bool) -> str:
    path = directory / ("over-zeros" if over_zeros else "appending")
    record = os.urandom(size)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_DSYNC, 0o644)
    try:
        if over_zeros:
            for _ in range(max(16, writes * size // len(_ZEROS) + 1)):
                os.write(fd, _ZEROS)
            os.lseek(fd, 0, os.SEEK_SET)
        latencies: list[float] = []
        before = os.times()
        for _ in range(writes):
            started = time.perf_counter()
            os.write(fd, record)
            latencies.append(time.perf_counter() - started)
        after = os.times()
    finally:
        os.close(fd)
        path.unlink()
    latencies.sort()
    user = (after.user - before.user) / writes * 1e6
    system = (after.system - before.system) / writes * 1e6
    name = "over zeros" if over_zeros else "appending"
    return (
        f"{name:<11} p50 {percentile(latencies, 0.50) * 1e6:7.0f} us  "
        f"p99 {percentile(latencies, 0.99) * 1e6:7.0f} us  "
        f"CPU user {user:5.1f} sys {system:5.1f} us/write"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--writes", type=int, default=2000, help="writes per case and round")
    parser.add_argument("--size", type=int, default=5200, help="bytes per write")
    parser.add_argument("--rounds", type=int, default=3, help="alternated rounds")
    parser.add_argument("--dir", type=Path, default=None, help="where (default: the temp dir)")
    args = parser.parse_args()
    print(header(vars(args)), flush=True)
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="bench-dsync-") as tmp:
        for round_ in range(1, args.rounds + 1):
            for over_zeros in (False, True):
                line = one_case(Path(tmp), args.writes, args.size, over_zeros=over_zeros)
                print(f"round {round_}  {line}", flush=True)


if __name__ == "__main__":
    main()
