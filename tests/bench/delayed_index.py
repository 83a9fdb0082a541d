"""Micro-benchmark: memory of the delayed-delivery index per million held messages (not a test).

Run: ``.venv/bin/python -m tests.bench.delayed_index [--messages 1000000]``

Fills a :class:`~magnetar.broker.dispatch.DelayedDeliveryIndex` the way a subscription does
(consecutive positions over ledgers of 50,000 entries, a Key_Shared sticky hash each, deliver-at
times spread over ``--spread-s`` seconds from now) and reports what ``tracemalloc`` saw the
index allocate (current, after the fill; and the peak during it), per message; then the
milliseconds to take every entry out with ``due``, 1,000 per call as the dispatcher does.
The figures are in docs/benchmarks.md ("Delayed-delivery index").
"""

from __future__ import annotations

import argparse
import gc
import random
import time
import tracemalloc

from magnetar.broker.dispatch import DelayedDeliveryIndex
from magnetar.ids import EntryId, LedgerId
from magnetar.managed_ledger import Position
from tests.bench.report import header

_ENTRIES_PER_LEDGER = 50_000
_RELEASE = 1000  # what a dispatch step releases at most (subscription._RELEASE_BATCH)


def fill(messages: int, tick_ms: int, spread_s: int, seed: int) -> tuple[int, int, float]:
    """Bytes held after the fill, peak bytes during it, ms to drain everything with ``due``."""
    rng = random.Random(seed)
    now = int(time.time() * 1000)
    spread = spread_s * 1000
    gc.collect()
    tracemalloc.start()
    index = DelayedDeliveryIndex(tick_ms=tick_ms, limit=messages + 1)
    for i in range(messages):
        pos = Position(LedgerId(1 + i // _ENTRIES_PER_LEDGER), EntryId(i % _ENTRIES_PER_LEDGER))
        index.add(pos, now + rng.randrange(spread), rng.randrange(65536))
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    started = time.perf_counter()
    taken = 0
    while index:
        taken += len(index.due(now + spread + tick_ms, _RELEASE))
    drain_ms = (time.perf_counter() - started) * 1e3
    assert taken == messages
    return current, peak, drain_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--spread-s", type=int, default=3600, help="delays spread over this")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(header(vars(args)), flush=True)
    columns = ("tick ms", 8), ("buckets", 8), ("MB held", 8), ("B/msg", 6), ("MB peak", 8)
    print(" ".join(f"{name:>{width}}" for name, width in columns), f"{'drain ms':>9}")
    for tick in (1000, 100):
        buckets = min(args.messages, args.spread_s * 1000 // tick)
        current, peak, drain_ms = fill(args.messages, tick, args.spread_s, args.seed)
        print(
            f"{tick:>8} {buckets:>8} {current / 1e6:>8.1f} {current / args.messages:>6.1f} "
            f"{peak / 1e6:>8.1f} {drain_ms:>9.0f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
