"""Micro-benchmark: one Key_Shared step choosing its replays behind parked entries (not a test).

Run: ``.venv/bin/python -m tests.bench.key_shared_replays [--repeat 5]``

A Key_Shared subscription parks the entries of a consumer without permits in its redelivery
queue (up to ``MAX_KEY_SHARED_LOOKAHEAD``) and, every dispatch step, picks the replays that can
go out now with ``RedeliveryQueue.positions(budget, key_shared_replayable(...))``. This script
builds that queue: ``parked`` entries of consumer A (no permits) ahead of 100 entries of
consumer B (permits), under an AUTO_SPLIT selector, with A's entries spread over ``keys``
distinct slots; it prints the milliseconds of one step (best of ``--repeat`` rounds), which
returns B's 100 entries. The figures are in docs/benchmarks.md ("Key_Shared replay choice").
"""

from __future__ import annotations

import argparse
import timeit

from magnetar.broker.dispatch import (
    AutoSplitSelector,
    ConsumerInfo,
    ConsumerKey,
    KeySharedView,
    PendingAcks,
    RedeliveryQueue,
    key_shared_replayable,
)
from magnetar.ids import EntryId, LedgerId
from magnetar.managed_ledger import Position
from tests.bench.report import header

_BUDGET = 100
_SLOTS = 1 << 16


def step_ms(parked: int, keys: int, repeat: int) -> float:
    selector = AutoSplitSelector()
    a, b = ConsumerInfo(1, "a"), ConsumerInfo(2, "b")
    selector.add(a)
    selector.add(b)
    slots_a = [s for s in range(_SLOTS) if selector.select(s) == a.key]
    slots_b = [s for s in range(_SLOTS) if selector.select(s) == b.key]
    queue = RedeliveryQueue()
    for i in range(parked):
        queue.add(Position(LedgerId(1), EntryId(i)), slots_a[(i * 7919) % keys % len(slots_a)])
    for i in range(_BUDGET):
        queue.add(Position(LedgerId(2), EntryId(i)), slots_b[i])
    permits: dict[ConsumerKey, int] = {a.key: 0, b.key: 1000}
    view = KeySharedView(selector.select, {}, PendingAcks().holders_of_hash)

    def step() -> list[Position]:
        return queue.positions(_BUDGET, key_shared_replayable(view, lambda k: permits[k] > 0))

    assert len(step()) == _BUDGET
    return min(timeit.repeat(step, number=5, repeat=repeat)) / 5 * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=5, help="timeit rounds; the best counts")
    args = parser.parse_args()
    print(header(vars(args) | {"budget": _BUDGET}), flush=True)
    print(f"{'keys of A':>9} {'parked':>7} {'step ms':>8}")
    for keys in (100, 20_000):
        for parked in (1_000, 5_000, 20_000):
            print(f"{keys:>9} {parked:>7} {step_ms(parked, keys, args.repeat):>8.2f}", flush=True)


if __name__ == "__main__":
    main()
