"""Benchmark: what the entry logs' page-cache window costs a consumer catching up.

Usage::

    python -m tests.bench.entry_log_catchup [--log-mib 512] [--read-mib 256] [--rounds 2]

The bookie keeps only the last ``entry_log_page_cache_mbytes`` of its entry logs in the page
cache (docs/storage.md, "Entry logs in the page cache"); a read of anything older comes from
the disk. Each round writes ``--log-mib`` of 16 KiB entries into a fresh
:class:`~magnetar.bookie.entry_log.EntryLog` (256 MiB logs, as the bookie's), syncs it, then
reads the oldest ``--read-mib`` back in order, 100 entries a call (``read_many``: one read per
span, as a catch-up read of a ledger's entries is), and prints the read's MB/s and CPU per
entry, with buffered appends and every page kept (window 0), with buffered appends and the
default window, and with the bookie's default, direct writes (written behind, no page cached:
docs/storage.md, "Entry logs written behind"), alternately. Not a test: the figures go to
docs/benchmarks.md ("Entry logs in the page cache").
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from magnetar.bookie.entry_log import PAGE_CACHE_BYTES, EntryLocation, EntryLog
from tests.bench.report import header

_ENTRY = 16 * 1024
_PER_READ = 100


def one_round(directory: Path, window: int, direct: bool, log_mib: int, read_mib: int) -> str:
    entry_log = EntryLog(directory, page_cache_bytes=window, direct_writes=direct)
    payload = os.urandom(_ENTRY)
    locations: list[EntryLocation] = []
    try:
        for entry_id in range(log_mib * (1 << 20) // _ENTRY):
            locations += entry_log.append([(1, entry_id, payload)])
        entry_log.sync()
        entry_log.append([(2, 0, bytes(2 << 20))])  # a writeback step: the trim runs after it
        time.sleep(1.0)
        wanted = [(1, i, loc) for i, loc in enumerate(locations[: read_mib * (1 << 20) // _ENTRY])]
        before, started = os.times(), time.perf_counter()
        for at in range(0, len(wanted), _PER_READ):
            entry_log.read_many(wanted[at : at + _PER_READ])
        after, elapsed = os.times(), time.perf_counter() - started
    finally:
        entry_log.close()
    cpu = (after.user + after.system - before.user - before.system) / len(wanted) * 1e6
    label = (
        "direct writes"
        if direct
        else ("every page kept" if window == 0 else f"window {window >> 20} MiB")
    )
    return (
        f"{label:<16} catch-up read of the oldest {read_mib} MiB: "
        f"{read_mib / elapsed:7.0f} MB/s, {cpu:5.1f} us CPU per 16 KiB entry"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--log-mib", type=int, default=512, help="MiB written per round")
    parser.add_argument("--read-mib", type=int, default=256, help="oldest MiB read back")
    parser.add_argument("--rounds", type=int, default=2, help="alternated rounds")
    parser.add_argument("--dir", type=Path, default=None, help="where (default: the temp dir)")
    args = parser.parse_args()
    print(header(vars(args) | {"window_mib": PAGE_CACHE_BYTES >> 20}), flush=True)
    for round_ in range(1, args.rounds + 1):
        for window, direct in ((0, False), (PAGE_CACHE_BYTES, False), (PAGE_CACHE_BYTES, True)):
            with tempfile.TemporaryDirectory(dir=args.dir, prefix="bench-catchup-") as tmp:
                line = one_round(Path(tmp), window, direct, args.log_mib, args.read_mib)
            print(f"round {round_}  {line}", flush=True)


if __name__ == "__main__":
    main()
