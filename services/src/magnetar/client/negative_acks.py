"""Negative acknowledgements: entries to redeliver after a delay.

``negative_acknowledge(msg)`` does not redeliver at once: the entry waits
``redelivery_delay_s`` (Pulsar's default: 60 s) and then goes back to the broker in a
REDELIVER_UNACKNOWLEDGED_MESSAGES. Redelivery is per entry: a nack of one index of a batch
redelivers the entry (the broker skips indexes it knows are acknowledged).

Sans-I/O: callers pass the clock (``now``, seconds, any monotonic origin). Invariants: an
entry is tracked at most once; a repeated nack moves its deadline to the newest one; ids
returned by :meth:`NegativeAckTracker.due` are whole-entry ids (batch_index -1) that keep
their partition.

Concurrency: single-threaded; owned by one consumer on its event loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from magnetar.client.message import entry_id_of
from magnetar.protocol.message_id import MessageId


@dataclass
class NegativeAckTracker:
    redelivery_delay_s: float = 60.0
    _deadlines: dict[MessageId, float] = field(default_factory=dict)

    def add(self, mid: MessageId, now: float) -> None:
        entry = entry_id_of(mid)
        self._deadlines.pop(entry, None)
        self._deadlines[entry] = now + max(0.0, self.redelivery_delay_s)

    def due(self, now: float) -> list[MessageId]:
        """Entries whose delay has passed, oldest first; they stop being tracked."""
        ready = sorted((t, mid) for mid, t in self._deadlines.items() if t <= now)
        for _, mid in ready:
            del self._deadlines[mid]
        return [mid for _, mid in ready]

    def next_deadline(self) -> float | None:
        return min(self._deadlines.values(), default=None)

    def discard(self, mid: MessageId) -> None:
        self._deadlines.pop(entry_id_of(mid), None)

    def clear(self) -> None:
        self._deadlines.clear()

    def __len__(self) -> int:
        return len(self._deadlines)
