"""The ack-timeout tracker: messages handed to the application and not acknowledged in time.

With ``ack_timeout_s`` > 0 every message the application receives is tracked; if it is not
acknowledged within the timeout its entry is redelivered (REDELIVER_UNACKNOWLEDGED_MESSAGES).
0 turns the feature off (Pulsar's default).

Sans-I/O: callers pass the clock (``now``). The timeout is the same for every message, so
insertion order is deadline order: the tracker is an insertion-ordered dict and
:meth:`UnackedTracker.expired` pops from its front. Invariants: a message id is tracked at
most once (re-adding moves it to the back with a fresh deadline); ids returned by
:meth:`expired` are whole-entry ids, one per entry, and every message of an expired entry
stops being tracked (its redelivery brings them back).

Concurrency: single-threaded; owned by one consumer on its event loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from magnetar.client.message import entry_id_of
from magnetar.protocol.message_id import MessageId


@dataclass
class UnackedTracker:
    ack_timeout_s: float = 0.0
    _deadlines: dict[MessageId, float] = field(default_factory=dict)

    @property
    def enabled(self) -> bool:
        return self.ack_timeout_s > 0

    def add(self, mid: MessageId, now: float) -> None:
        if not self.enabled:
            return
        self._deadlines.pop(mid, None)
        self._deadlines[mid] = now + self.ack_timeout_s

    def remove(self, mid: MessageId) -> None:
        """An individual ack; a whole-entry id removes every tracked index of the entry."""
        if self._deadlines.pop(mid, None) is None and mid.batch_index < 0:
            for tracked in [m for m in self._deadlines if m.entry == mid.entry]:
                del self._deadlines[tracked]

    def remove_up_to(self, mid: MessageId) -> None:
        """A cumulative ack: everything at or before ``mid`` (clients' order, same partition)."""

        def covered(m: MessageId) -> bool:
            if m.entry != mid.entry:
                return m.entry < mid.entry
            return mid.batch_index < 0 or m.batch_index <= mid.batch_index

        for tracked in [m for m in self._deadlines if covered(m)]:
            del self._deadlines[tracked]

    def expired(self, now: float) -> list[MessageId]:
        """Whole-entry ids of messages past their deadline (each entry once)."""
        entries: dict[MessageId, None] = {}
        for mid, deadline in self._deadlines.items():
            if deadline > now:
                break
            entries[entry_id_of(mid)] = None
        if entries:
            for tracked in [m for m in self._deadlines if entry_id_of(m) in entries]:
                del self._deadlines[tracked]
        return list(entries)

    def next_deadline(self) -> float | None:
        return next(iter(self._deadlines.values()), None)

    def clear(self) -> None:
        self._deadlines.clear()

    def __len__(self) -> int:
        return len(self._deadlines)
