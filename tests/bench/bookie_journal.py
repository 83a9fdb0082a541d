"""Micro-benchmark of the bookie journal: adds/s and MB/s with fdatasync (not a test).

Run: ``.venv/bin/python -m tests.bench.bookie_journal [--seconds 3] [--inflight 256]``

For 1 KiB and 64 KiB entries it appends from many concurrent writers through the real journal
(group commit, one fdatasync per group) into the real RocksDB ledger storage, in a temp dir,
each case bounded in time, and prints adds/s, MB/s and the mean group size.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from magnetar.bookie.journal import Journal, JournalConfig, JournalRecord, RecordKind
from magnetar.bookie.ledger_storage import LedgerStorage


class CountingStorage(LedgerStorage):
    groups = 0

    def apply(self, records: Sequence[JournalRecord]) -> None:
        self.groups += 1
        super().apply(records)


async def run_case(directory: Path, size: int, seconds: float, inflight: int, sync: bool) -> str:
    storage = CountingStorage(directory / "ledgers")
    journal = await Journal.open(directory / "journal", storage, JournalConfig(sync=sync))
    payload = b"\xab" * size
    next_id = 0
    deadline = time.monotonic() + seconds

    async def writer() -> int:
        nonlocal next_id
        done = 0
        while time.monotonic() < deadline:
            entry_id = next_id
            next_id += 1
            await journal.append(
                JournalRecord(RecordKind.ADD, 1, entry_id, entry_id - 1, 0, b"mk", payload)
            )
            done += 1
        return done

    start = time.monotonic()
    counts = await asyncio.gather(*(writer() for _ in range(inflight)))
    elapsed = time.monotonic() - start
    await journal.close()
    storage.close()
    adds = sum(counts)
    return (
        f"entry={size // 1024:>3} KiB sync={sync!s:5} inflight={inflight:>4}: "
        f"{adds / elapsed:>10.0f} adds/s {adds * size / elapsed / 1e6:>8.1f} MB/s "
        f"mean group {adds / max(1, storage.groups):>6.1f} records"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--inflight", type=int, default=256)
    parser.add_argument("--dir", type=Path, default=None, help="where to write (default: tmp)")
    args = parser.parse_args()
    for size in (1024, 65536):
        for sync in (True, False):
            with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
                print(await run_case(Path(tmp), size, args.seconds, args.inflight, sync))


if __name__ == "__main__":
    asyncio.run(main())
