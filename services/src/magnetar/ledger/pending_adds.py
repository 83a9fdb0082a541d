"""The sans-I/O core of a write handle: entry ids, write sets, acks, in-order confirmation.

:class:`AddTracker` (BookKeeper's ``PendingAddOp`` queue) keeps the unconfirmed entries as
*runs*: a :class:`PendingRun` is a range of consecutive entry ids added by one call (a run of
one for a single add), with its payloads, and per bookie how far it was sent and acked. A run
travels as one unit: one send per bookie, one answer per bookie, one confirmation per range.

Invariants:

- entry ids are dense and assigned in :meth:`AddTracker.new_run` call order; runs are queued
  in id order and never overlap;
- every pending entry belongs to the *current* (last) ensemble: ensemble changes start at
  ``last_add_confirmed + 1`` and confirmations are frozen while a change is in progress;
- per run and bookie, ``sent[b]`` is the highest entry id handed to ``b`` and ``acked[b]`` the
  highest entry id up to which ``b`` acked every entry of its write sets in the run: a
  bookie's adds are answered in order, so what it acknowledged is a prefix. An answer that
  fails at entry ``e`` keeps the acks before ``e`` (:meth:`AddTracker.forget`); ``e`` and the
  rest go through the failure path (the bookie is replaced and they are resent);
- ``sent``/``acked`` only name bookies of the current ensemble (:meth:`AddTracker.apply_ensemble`
  drops the replaced ones), and an answer from a bookie the run was not sent to is ignored;
- an entry is complete when Aq bookies of its write set acked it; it is *confirmed* only once
  every earlier entry is confirmed (``last_add_confirmed`` only grows, in id order), so a run
  may be confirmed in several ranges (``run.confirmed`` is its highest confirmed id);
- after :meth:`AddTracker.apply_ensemble`, :meth:`AddTracker.unsent` lists what to (re)send
  to the replacement: the unconfirmed entries of each run from ``confirmed + 1`` on.

No I/O, no loop: the write handle drives it from its task and does the sending.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import TYPE_CHECKING

from magnetar.ids import BookieId
from magnetar.ledger.distribution import write_set
from magnetar.ledger.metadata import Ensemble

if TYPE_CHECKING:
    from magnetar.ledger.bookie_client import AddRequest

RunCallback = Callable[[int, int, "BaseException | None"], None]
"""(first entry id, count, error): a confirmed range of a run (error None), in id order, or
the rest of the run failed with ``error``."""

Confirmed = tuple["PendingRun", int, int, int]
"""A confirmed range: (run, first entry id, last entry id, payload bytes of the range)."""


class PendingRun:
    """Consecutive unconfirmed entries added by one call. A ``__slots__`` class: one is built
    per run on the event loop.

    ``requests`` and ``callback`` are the write handle's (its wire requests, one per entry,
    and its caller's run callback), kept here so that it needs no dicts of its own."""

    __slots__ = (
        "acked",
        "callback",
        "confirmed",
        "first",
        "last",
        "last_add_confirmed",
        "payloads",
        "pending",
        "requests",
        "sent",
        "single",
    )

    def __init__(self, first: int, payloads: list[bytes], last_add_confirmed: int) -> None:
        self.first = first
        self.last = first + len(payloads) - 1
        self.payloads = payloads
        self.last_add_confirmed = last_add_confirmed  # piggybacked LAC, same on every entry
        self.confirmed = first - 1  # highest confirmed entry id of the run
        self.pending = True  # False once fully confirmed or drained
        self.sent: dict[BookieId, int] = {}
        self.acked: dict[BookieId, int] = {}
        self.requests: list[AddRequest] = []
        self.callback: RunCallback | None = None
        # A run of one added by ``append_callback``: its caller's callback, called directly.
        self.single: Callable[[int | BaseException], None] | None = None


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
        self.pending_count = 0  # unconfirmed entries
        self.changing = False
        self._next_entry_id = last_add_confirmed + 1
        self._runs: collections.deque[PendingRun] = collections.deque()

    @property
    def last_add_pushed(self) -> int:
        return self._next_entry_id - 1

    @property
    def runs(self) -> list[PendingRun]:
        """The pending runs, in id order (a copy)."""
        return list(self._runs)

    def new_run(self, payloads: list[bytes], size: int) -> PendingRun:
        """Queue ``payloads`` (``size`` bytes together) as the next entries."""
        run = PendingRun(self._next_entry_id, payloads, self.last_add_confirmed)
        self._next_entry_id += len(payloads)
        self._runs.append(run)
        self.pending_bytes += size
        self.pending_count += len(payloads)
        return run

    def _set_ensemble(self, ensemble: Ensemble) -> None:
        self.ensemble = ensemble
        # Write sets repeat every E entries: computed once per ensemble, not once per call.
        self._write_sets = tuple(
            tuple(ensemble[p] for p in write_set(start, len(ensemble), self.write_quorum))
            for start in range(len(ensemble))
        )
        self._striped = self.write_quorum < len(ensemble)

    def targets(self, entry_id: int) -> tuple[BookieId, ...]:
        """The bookies of ``entry_id``'s write set in the current ensemble."""
        sets = self._write_sets
        return sets[entry_id % len(sets)]

    # ------------------------------------------------------------------ sends
    def sends(self, run: PendingRun, start: int) -> list[tuple[BookieId, list[AddRequest]]]:
        """Mark sent and return, per bookie of the current ensemble, the run's requests from
        entry ``start`` on that are in its write sets and not yet sent to it (in id order)."""
        out: list[tuple[BookieId, list[AddRequest]]] = []
        requests = run.requests
        first = run.first
        sent = run.sent
        for bookie in self.ensemble:
            begin = max(start, sent.get(bookie, start - 1) + 1)
            if begin > run.last:
                continue
            if self._striped:
                mine = [
                    requests[i]
                    for i in range(begin - first, len(requests))
                    if bookie in self.targets(first + i)
                ]
            else:
                mine = requests[begin - first :] if begin > first else requests
            if mine:
                sent[bookie] = mine[-1].entry_id
                out.append((bookie, mine))
        return out

    def unsent(self) -> list[tuple[PendingRun, BookieId, list[AddRequest]]]:
        """(run, bookie, requests) still to send, marked sent; nothing while an ensemble change
        is running."""
        if self.changing:
            return []
        return [
            (run, bookie, requests)
            for run in self._runs
            for bookie, requests in self.sends(run, run.confirmed + 1)
        ]

    # ------------------------------------------------------------------ answers
    def on_acks(self, run: PendingRun, bookie: BookieId, upto: int) -> list[Confirmed]:
        """``bookie`` acked every entry of ``run`` it was sent up to ``upto``; return the
        ranges confirmed by it, in id order."""
        if run.pending:
            sent = run.sent.get(bookie)
            if sent is not None:
                upto = min(upto, sent)
                if upto > run.acked.get(bookie, -1):
                    run.acked[bookie] = upto
        return self.confirmable()

    def forget(self, run: PendingRun, bookie: BookieId, entry_id: int) -> None:
        """The add of ``entry_id`` (and of what follows it in ``run``) to ``bookie`` failed:
        it must be sent again once the bookie is replaced; the acks before it stay."""
        sent = run.sent.get(bookie)
        if run.pending and sent is not None:
            run.sent[bookie] = min(sent, entry_id - 1)
            acked = run.acked.get(bookie)
            if acked is not None and acked >= entry_id:
                run.acked[bookie] = entry_id - 1

    def _complete_upto(self, run: PendingRun) -> int:
        """The highest id of ``run`` up to which every entry has Aq acks of its write set."""
        acked = run.acked
        quorum = self.ack_quorum
        if not self._striped:  # every bookie holds every entry: the Aq-th highest ack
            if len(acked) < quorum:
                return run.confirmed
            if quorum == 1:
                return min(max(acked.values()), run.last)
            if quorum == len(acked):
                return min(min(acked.values()), run.last)
            marks = sorted(acked.values(), reverse=True)
            return min(marks[quorum - 1], run.last)
        entry = run.confirmed
        while entry < run.last:
            following = entry + 1
            count = 0
            for bookie in self.targets(following):
                if acked.get(bookie, -1) >= following:
                    count += 1
            if count < quorum:
                break
            entry = following
        return entry

    def confirmable(self) -> list[Confirmed]:
        """Pop the completed entries at the head of the queue (none while changing): the
        confirmed ranges, in id order."""
        confirmed: list[Confirmed] = []
        if self.changing:
            return confirmed
        runs = self._runs
        while runs:
            head = runs[0]
            upto = self._complete_upto(head)
            if upto <= head.confirmed:
                break
            low = head.confirmed + 1
            if low == head.first and upto == head.last:
                payloads = head.payloads
            else:
                payloads = head.payloads[low - head.first : upto - head.first + 1]
            size = 0
            for payload in payloads:
                size += len(payload)
            head.confirmed = upto
            self.last_add_confirmed = upto
            self.length += size
            self.pending_bytes -= size
            self.pending_count -= upto - low + 1
            confirmed.append((head, low, upto, size))
            if upto < head.last:
                break
            head.pending = False
            runs.popleft()
        return confirmed

    # ------------------------------------------------------------------ ensemble
    def begin_change(self) -> None:
        """Freeze confirmations: the new segment will start at ``last_add_confirmed + 1``."""
        self.changing = True

    def apply_ensemble(self, ensemble: Ensemble) -> list[Confirmed]:
        """Switch to ``ensemble``; forget acks/sends of replaced bookies; return confirmations."""
        replaced = set(self.ensemble) - set(ensemble)
        self._set_ensemble(ensemble)
        for run in self._runs:
            for bookie in replaced:
                run.sent.pop(bookie, None)
                run.acked.pop(bookie, None)
        self.changing = False
        return self.confirmable()

    def drain(self) -> list[PendingRun]:
        """Remove and return every pending run (the handle failed); each run's unconfirmed
        entries are ``confirmed + 1 .. last``."""
        runs = list(self._runs)
        self._runs.clear()
        for run in runs:
            run.pending = False
        self.pending_bytes = 0
        self.pending_count = 0
        return runs
