"""Benchmark: do old journal segments pile up under a fast write load?

Usage::

    python -m tests.bench.journal_backlog [--seconds 10] [--size 16384] [--dir DIR]

Opens a :class:`~magnetar.bookie.journal.Journal` (fdatasync on, 64 MiB segments) over a sink
that stores nothing, so the journal's own writes are the whole load, and appends batches of 64
records of ``--size`` bytes as fast as it takes them (32 batches in flight) for ``--seconds``,
running a checkpoint on every segment roll as the bookie's checkpoint loop does. Prints the
MB/s written, the most segment files on disk at once (sampled every 50 ms) and how many were
left at the close: with deletion that keeps pace the count stays bounded whatever the rate;
otherwise it grows with the run. Not a test: numbers go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from magnetar.bookie.journal import Journal, JournalConfig
from magnetar.bookie.journal_record import JournalRecord, RecordKind
from magnetar.bookie.journal_replay import list_segments
from tests.bench.report import bench_json, header

BATCH = 64
IN_FLIGHT = 32


class NullSink:
    """Stores nothing: the journal's writes and deletions are all the disk sees."""

    def apply(self, records: Sequence[JournalRecord], payload_crcs: Sequence[int] = ()) -> None:
        pass

    def flush(self) -> None:
        pass


async def run(directory: Path, seconds: float, size: int) -> dict[str, float]:
    journal = await Journal.open(directory, NullSink(), JournalConfig(sync=True))
    payload = b"x" * size
    most = 0

    async def checkpoint_on_roll() -> None:
        while True:
            await journal.rolled.wait()
            journal.rolled.clear()
            await journal.checkpoint()

    async def count_segments() -> None:
        nonlocal most
        while True:
            most = max(most, len(list_segments(directory)))
            await asyncio.sleep(0.05)

    helpers = [asyncio.create_task(checkpoint_on_roll()), asyncio.create_task(count_segments())]
    entry = written = 0
    pending: list[asyncio.Future[None]] = []
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        records = [
            JournalRecord(RecordKind.ADD, 1, entry + i, entry + i - 1, 0, b"key", payload)
            for i in range(BATCH)
        ]
        entry += BATCH
        pending.append(await journal.enqueue_many(records))
        written += BATCH * size
        if len(pending) > IN_FLIGHT:
            await pending.pop(0)
    await asyncio.gather(*pending)
    elapsed = time.monotonic() - started
    for task in helpers:
        task.cancel()
    await asyncio.gather(*helpers, return_exceptions=True)
    await journal.close()
    return {
        "mb_s": round(written / elapsed / 1e6, 1),
        "most_segments": most,
        "segments_left": len(list_segments(directory)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--size", type=int, default=16384, help="payload bytes per record")
    parser.add_argument("--dir", type=Path, help="where the journal goes (default: a temp dir)")
    args = parser.parse_args(argv)
    print(header({k: str(v) for k, v in vars(args).items()}))
    with tempfile.TemporaryDirectory(prefix="bench-journal-backlog-", dir=args.dir) as tmp:
        result = asyncio.run(run(Path(tmp), args.seconds, args.size))
    print(
        f"journal {result['mb_s']:.0f} MB/s: at most {result['most_segments']} segments on "
        f"disk, {result['segments_left']} left at the close",
        flush=True,
    )
    bench_json({"benchmark": "journal_backlog", **vars(args), "dir": str(args.dir), **result}, None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
