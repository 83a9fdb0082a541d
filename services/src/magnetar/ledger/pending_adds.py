"""The sans-I/O core of a write handle: entry ids, write sets, acks, in-order confirmation.

:class:`AddTracker` (BookKeeper's ``PendingAddOp`` queue) knows, for each entry not yet
confirmed, its payload, the bookies it was sent to and the bookies that acked it. Invariants:

- entry ids are dense and assigned in :meth:`AddTracker.new_entry` call order;
- every pending entry belongs to the *current* (last) ensemble: ensemble changes start at
  ``last_add_confirmed + 1`` and confirmations are frozen while a change is in progress;
- an entry is complete when Aq bookies of its write set in the current ensemble acked it; it is
  *confirmed* only once every earlier entry is confirmed (``last_add_confirmed`` only grows,
  by one, in id order);
- an entry's ``acked`` bookies are always part of its write set in the current ensemble
  (:meth:`AddTracker.on_ack` records only those, :meth:`AddTracker.apply_ensemble` drops the
  rest), so completion is a size check;
- after :meth:`AddTracker.apply_ensemble`, acks from a replaced bookie no longer count and
  :meth:`AddTracker.unsent` lists what to (re)send to its replacement.

No I/O, no loop: the write handle drives it from its task and does the sending.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from magnetar.ids import BookieId, EntryId
from magnetar.ledger.distribution import write_set
from magnetar.ledger.metadata import Ensemble

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable

    from magnetar.ledger.bookie_client import AddRequest


class PendingAdd:
    """One unconfirmed entry. A ``__slots__`` class, not a dataclass: one is built per add on
    the event loop, and a dataclass with two ``default_factory`` sets costs more
    (docs/benchmarks.md, "Per-message costs").

    ``request``, ``future`` and ``callback`` are the write handle's (its wire request and its
    caller's future or callback), kept here so that it needs no per-entry dicts of its own."""

    __slots__ = (
        "acked",
        "callback",
        "entry_id",
        "future",
        "last_add_confirmed",
        "payload",
        "request",
        "sent",
    )

    def __init__(self, entry_id: EntryId, payload: bytes, last_add_confirmed: int) -> None:
        self.entry_id = entry_id
        self.payload = payload
        self.last_add_confirmed = last_add_confirmed  # piggybacked LAC, same on every replica
        self.sent: set[BookieId] = set()
        self.acked: set[BookieId] = set()
        self.request: AddRequest | None = None
        self.future: asyncio.Future[EntryId] | None = None
        self.callback: Callable[[EntryId | BaseException], None] | None = None


class AddTracker:
    def __init__(
        self,
        ensemble: Ensemble,
        write_quorum: int,
        ack_quorum: int,
        last_add_confirmed: int = -1,
        length: int = 0,
    ) -> None:
        self.write_quorum = write_quorum
        self.ack_quorum = ack_quorum
        self._set_ensemble(ensemble)
        self.last_add_confirmed = last_add_confirmed
        self.length = length  # payload bytes of confirmed entries
        self.pending_bytes = 0
        self.changing = False
        self._next_entry_id = last_add_confirmed + 1
        self._pending: dict[int, PendingAdd] = {}

    @property
    def pending_count(self) -> int:
        return len(self._pending)

    @property
    def last_add_pushed(self) -> int:
        return self._next_entry_id - 1

    def new_entry(self, payload: bytes) -> PendingAdd:
        add = PendingAdd(EntryId(self._next_entry_id), payload, self.last_add_confirmed)
        self._next_entry_id += 1
        self._pending[add.entry_id] = add
        self.pending_bytes += len(payload)
        return add

    def _set_ensemble(self, ensemble: Ensemble) -> None:
        self.ensemble = ensemble
        # Write sets repeat every E entries: computed once per ensemble, not once per call.
        self._write_sets = tuple(
            tuple(ensemble[p] for p in write_set(start, len(ensemble), self.write_quorum))
            for start in range(len(ensemble))
        )

    def targets(self, entry_id: int) -> tuple[BookieId, ...]:
        """The bookies of ``entry_id``'s write set in the current ensemble."""
        sets = self._write_sets
        return sets[entry_id % len(sets)]

    def unsent(self) -> list[tuple[PendingAdd, BookieId]]:
        """(entry, bookie) pairs still to send; nothing while an ensemble change is running."""
        if self.changing:
            return []
        return [
            (add, bookie)
            for add in self._pending.values()
            for bookie in self.targets(add.entry_id)
            if bookie not in add.sent
        ]

    def mark_sent(self, add: PendingAdd, bookie: BookieId) -> None:
        add.sent.add(bookie)

    def on_ack(self, entry_id: int, bookie: BookieId) -> list[PendingAdd]:
        """Record an ack; return the entries confirmed by it, in id order."""
        add = self._pending.get(entry_id)
        if add is not None and bookie in self.targets(entry_id) and bookie in add.sent:
            add.acked.add(bookie)
        return self.confirmable()

    def confirmable(self) -> list[PendingAdd]:
        """Pop and return the completed entries at the head of the queue (none while changing)."""
        confirmed: list[PendingAdd] = []
        if self.changing:
            return confirmed
        while True:
            head = self._pending.get(self.last_add_confirmed + 1)
            if head is None or len(head.acked) < self.ack_quorum:  # acked ⊆ its write set
                return confirmed
            del self._pending[head.entry_id]
            self.last_add_confirmed = head.entry_id
            self.length += len(head.payload)
            self.pending_bytes -= len(head.payload)
            confirmed.append(head)

    def begin_change(self) -> None:
        """Freeze confirmations: the new segment will start at ``last_add_confirmed + 1``."""
        self.changing = True

    def apply_ensemble(self, ensemble: Ensemble) -> list[PendingAdd]:
        """Switch to ``ensemble``; forget acks/sends of replaced bookies; return confirmations."""
        replaced = set(self.ensemble) - set(ensemble)
        self._set_ensemble(ensemble)
        for add in self._pending.values():
            add.acked.intersection_update(self.targets(add.entry_id))
            add.sent -= replaced
        self.changing = False
        return self.confirmable()

    def forget_send(self, entry_id: int, bookie: BookieId) -> None:
        """The send of ``entry_id`` to ``bookie`` failed: it must be sent again once the bookie
        is replaced (nothing to do if the entry is no longer pending)."""
        add = self._pending.get(entry_id)
        if add is not None:
            add.sent.discard(bookie)
            add.acked.discard(bookie)

    def drain(self) -> list[PendingAdd]:
        """Remove and return every pending entry (the handle failed)."""
        pending = list(self._pending.values())
        self._pending.clear()
        self.pending_bytes = 0
        return pending
