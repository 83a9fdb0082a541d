"""Redelivery: the replay queue, redelivery counts, negative-ack delays, ack timeouts, DLQ hook.

* :class:`RedeliveryQueue` — entries waiting to be sent again (Pulsar's ``messagesToRedeliver``),
  in position order, with their Key_Shared slot: the dispatcher replays them before reading new
  entries, and holds back new reads of a slot that still has entries here.
* :class:`RedeliveryCounts` — how many times each position was handed back for redelivery
  (``InMemoryRedeliveryTracker``); MESSAGE carries it as ``redelivery_count`` (only when > 0).
  :func:`dead_letter_due` is the hook: a client (or a broker-side DLQ policy) routes a message to
  the dead-letter topic once ``count >= max_redeliver_count`` (``max_redeliver_count <= 0``
  disables it).
* :class:`NegativeAckSchedule` — negatively acked positions become ready at ``now + delay``;
  the caller passes the clock value in (no timers here) and arms its own timer at
  :meth:`NegativeAckSchedule.next_due`.
* :class:`AckTimeoutTracker` — delivered positions not acked within a timeout. Pulsar clients
  run ack timeouts themselves and send REDELIVER_UNACKNOWLEDGED; this is for broker-side use.

Driving it from the subscription task::

    for p in pending.redeliver(key, ids):           # REDELIVER_UNACKNOWLEDGED or consumer closed
        counts.increment(p.position); queue.add(p.position, p.sticky_hash)
    schedule.add(ids, due=clock() + delay)          # broker-side negative ack
    for pos in schedule.pop_due(clock()): ...       # on the timer
    replays = queue.positions(budget, accept)       # read these entries, then plan_dispatch

Mutable; owned by one subscription's task; no awaits, no I/O. Clock values are seconds (any
monotonic origin) chosen by the caller.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Iterable

from magnetar.managed_ledger.position import Position


def dead_letter_due(redelivery_count: int, max_redeliver_count: int) -> bool:
    """Whether a message redelivered ``redelivery_count`` times goes to the dead-letter topic."""
    return max_redeliver_count > 0 and redelivery_count >= max_redeliver_count


class RedeliveryQueue:
    """Positions waiting for replay, sorted, each with its Key_Shared slot (or None)."""

    def __init__(self) -> None:
        self._positions: list[Position] = []
        self._hash_of: dict[Position, int | None] = {}
        self._hash_count: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._positions)

    def __contains__(self, position: object) -> bool:
        return position in self._hash_of

    def add(self, position: Position, sticky_hash: int | None = None) -> None:
        if position in self._hash_of:
            return
        bisect.insort(self._positions, position)
        self._hash_of[position] = sticky_hash
        if sticky_hash is not None:
            self._hash_count[sticky_hash] = self._hash_count.get(sticky_hash, 0) + 1

    def remove(self, position: Position) -> bool:
        if position not in self._hash_of:
            return False
        sticky_hash = self._hash_of.pop(position)
        del self._positions[bisect.bisect_left(self._positions, position)]
        if sticky_hash is not None:
            self._hash_count[sticky_hash] -= 1
            if not self._hash_count[sticky_hash]:
                del self._hash_count[sticky_hash]
        return True

    def remove_up_to(self, position: Position) -> list[Position]:
        """Forget every position <= ``position`` (a cumulative ack or mark-delete moved)."""
        gone = self._positions[: bisect.bisect_right(self._positions, position)]
        for p in gone:
            self.remove(p)
        return gone

    def positions(
        self,
        limit: int | None = None,
        accept: Callable[[Position, int | None], bool] | None = None,
    ) -> list[Position]:
        """The oldest positions first (at most ``limit``); with ``accept(position, slot)``, only
        those it accepts (Key_Shared: :func:`~.dispatcher.key_shared_replayable`).

        Once ``accept`` refuses a position of a slot, the later positions of that slot are
        skipped without asking: Key_Shared delivers a slot in position order, so a slot held
        back at one position is held back at every later one. Entries parked for a consumer
        without permits then cost a set lookup each, not a call of ``accept``."""
        if accept is None:
            return list(self._positions if limit is None else self._positions[:limit])
        chosen: list[Position] = []
        refused: set[int] = set()
        hash_of = self._hash_of
        for position in self._positions:
            if limit is not None and len(chosen) >= limit:
                break
            slot = hash_of[position]
            if slot in refused:
                continue
            if accept(position, slot):
                chosen.append(position)
            elif slot is not None:
                refused.add(slot)
        return chosen

    def hashes(self) -> frozenset[int]:
        """Slots with entries waiting here: new reads of them must wait (per-key order)."""
        return frozenset(self._hash_count)

    def clear(self) -> None:
        self._positions.clear()
        self._hash_of.clear()
        self._hash_count.clear()


class RedeliveryCounts:
    """Redelivery count per position; forgotten when the position is acked."""

    def __init__(self) -> None:
        self._counts: dict[Position, int] = {}

    def increment(self, position: Position) -> int:
        count = self._counts.get(position, 0) + 1
        self._counts[position] = count
        return count

    def count(self, position: Position) -> int:
        return self._counts.get(position, 0)

    def forget(self, positions: Iterable[Position]) -> None:
        for p in positions:
            self._counts.pop(p, None)

    def forget_up_to(self, position: Position) -> None:
        for p in [p for p in self._counts if p <= position]:
            del self._counts[p]

    def __len__(self) -> int:
        return len(self._counts)


class NegativeAckSchedule:
    """Positions that become ready for redelivery at a due time (the latest add wins)."""

    def __init__(self) -> None:
        self._due: dict[Position, float] = {}
        self._heap: list[tuple[float, Position]] = []

    def __len__(self) -> int:
        return len(self._due)

    def __contains__(self, position: object) -> bool:
        return position in self._due

    def add(self, positions: Iterable[Position], due: float) -> None:
        for p in positions:
            self._due[p] = due
            heapq.heappush(self._heap, (due, p))
        if len(self._heap) > 2 * len(self._due) + 64:
            # Re-adds and removals leave stale heap slots; rebuild so memory stays bounded.
            self._heap = [(d, p) for p, d in self._due.items()]
            heapq.heapify(self._heap)

    def remove(self, position: Position) -> None:
        """Drop a position (acked meanwhile); its heap slot is skipped lazily."""
        self._due.pop(position, None)

    def pop_due(self, now: float) -> list[Position]:
        """Positions whose due time is <= ``now``, in position order; they leave the schedule."""
        ready: list[Position] = []
        while self._heap and self._heap[0][0] <= now:
            due, p = heapq.heappop(self._heap)
            if self._due.get(p) == due:
                del self._due[p]
                ready.append(p)
        return sorted(ready)

    def next_due(self) -> float | None:
        """When the earliest position becomes ready (for the caller's timer); None if empty."""
        while self._heap and self._due.get(self._heap[0][1]) != self._heap[0][0]:
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None


class AckTimeoutTracker:
    """Delivered positions and when they were sent; expired ones are due for redelivery."""

    def __init__(self, timeout: float) -> None:
        if timeout <= 0:
            raise ValueError(f"ack timeout must be positive, got {timeout}")
        self._timeout = timeout
        self._sent: dict[Position, float] = {}

    def __len__(self) -> int:
        return len(self._sent)

    def sent(self, position: Position, now: float) -> None:
        self._sent[position] = now

    def acked(self, position: Position) -> None:
        self._sent.pop(position, None)

    def expired(self, now: float) -> list[Position]:
        """Positions unacked for longer than the timeout, in position order; they are dropped."""
        gone = sorted(p for p, t in self._sent.items() if now - t >= self._timeout)
        for p in gone:
            del self._sent[p]
        return gone
