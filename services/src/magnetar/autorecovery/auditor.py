"""The auditor (BookKeeper's ``Auditor``): finds under-replicated ledgers and marks them.

One auditor in the cluster works at a time: every autorecovery process campaigns in the
election ``keys.lock(AUDITOR_ELECTION)`` (:class:`~magnetar.metadata.LeaderElection`) and only
the leader audits; when it dies, its session expires and another process takes over. A new
leader starts its lost-bookie clocks afresh (as BookKeeper's does).

While leading, every ``tick_s``:

- bookies named by some ledger, or registered at some point, but not registered now are *lost*
  from the moment the auditor first saw them missing; once one has been lost for
  ``lost_bookie_recovery_delay`` seconds (a bookie that restarts quickly costs no copying),
  every ledger naming it is marked with it;
- every ledger naming a bookie being decommissioned is marked with it at once;
- while a due or decommissioning bookie is still named by some ledger, the ledgers are scanned
  again every :data:`RESCAN_S` seconds (marks are idempotent: only new ledgers change);
- every ``audit_period`` seconds the full check runs: all of the above from a fresh listing, and
  each live bookie's entry ranges (``ListLedgers``) against what the CLOSED ledgers say it
  should hold; a bookie lacking entries (a wiped disk that came back under its id, a lost
  journal) has its ledgers marked with it.

Marking is idempotent (:meth:`UnderReplicationMarks.mark` merges), so a new leader re-marking
what its predecessor marked changes nothing. The decisions are pure (:mod:`.fragments`); this
module reads the metadata and bookies and writes marks.

Concurrency: :meth:`Auditor.run` is one task in the process's TaskGroup; it audits only while
:attr:`Auditor.is_leader`, and stops auditing mid-pass when leadership is lost.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable

from magnetar.autorecovery.fragments import lacks_entries
from magnetar.autorecovery.marks import UnderReplicationMarks
from magnetar.errors import MagnetarError
from magnetar.ids import BookieId, LedgerId
from magnetar.ledger import BookKeeper
from magnetar.ledger.errors import BookieUnavailable, InvalidLedgerConfig
from magnetar.ledger.metadata import LedgerMetadataView
from magnetar.metadata import LeaderElection, MetadataStore, Versioned, keys
from magnetar.telemetry import get_logger

log = get_logger(__name__)

AUDITOR_ELECTION = "autorecovery-auditor"
RESCAN_S = 5.0
_CALL_TIMEOUT_S = 10.0


class Auditor:
    def __init__(
        self,
        store: MetadataStore,
        bk: BookKeeper,
        auditor_id: str,
        *,
        lost_bookie_recovery_delay_s: float,
        audit_period_s: float,
        tick_s: float = 1.0,
    ) -> None:
        self._store = store
        self._bk = bk
        self._marks = UnderReplicationMarks(store)
        self.auditor_id = auditor_id
        self._delay_s = lost_bookie_recovery_delay_s
        self._period_s = audit_period_s
        self._tick_s = tick_s
        self._election = LeaderElection(store, AUDITOR_ELECTION, auditor_id.encode())
        self._lost_since: dict[BookieId, float] = {}
        self._named: frozenset[BookieId] = frozenset()  # by some ledger, at the last pass
        self._seen: set[BookieId] = set()  # registered at some point while this one leads
        self._handled: set[BookieId] = set()
        self._next_rescan = 0.0
        self.audits = 0  # full checks run while leading (read by metrics)

    @property
    def is_leader(self) -> bool:
        return self._election.is_leader

    async def run(self) -> None:
        """Campaign, and audit while leading; forever (cancel to stop)."""
        self._election.start()
        try:
            while True:
                await self._election.wait_until_leader()
                log.info("auditor_leading", auditor=self.auditor_id)
                self._lost_since.clear()
                self._handled.clear()
                self._seen.clear()
                await self._lead()
        finally:
            await self._election.close()

    async def _lead(self) -> None:
        next_full = 0.0
        while self.is_leader:
            now = time.monotonic()
            try:
                if now >= next_full:
                    await self.audit(full=True)
                    next_full = now + self._period_s
                else:
                    await self._tick(now)
            except (MagnetarError, TimeoutError) as exc:
                log.warning("audit_failed", error=repr(exc))
            except Exception:  # a bug must not end the auditor: logged, the next tick retries
                log.exception("audit_crashed")
            await asyncio.sleep(self._tick_s)
        log.info("auditor_stepped_down", auditor=self.auditor_id)

    def _clock_lost(self, now: float) -> frozenset[BookieId]:
        """Start or stop lost-bookie clocks; the bookies lost for at least the delay."""
        available = self._bk.registry.available()
        self._seen |= available
        for bookie in (self._named | self._seen) - available:
            self._lost_since.setdefault(bookie, now)
        for bookie in list(self._lost_since):
            if bookie in available:
                del self._lost_since[bookie]
                self._handled.discard(bookie)
        return frozenset(b for b, t in self._lost_since.items() if now - t >= self._delay_s)

    async def _tick(self, now: float) -> None:
        """Between full checks: scan when a lost bookie came due or a decommission began, and
        every :data:`RESCAN_S` while such a bookie is still named by some ledger (a ledger
        created just before the writer saw a decommission still names the bookie)."""
        due = self._clock_lost(now) | self._bk.registry.decommissioning()
        if due - self._handled or (due & self._named and now >= self._next_rescan):
            self._next_rescan = now + RESCAN_S
            await self.audit(full=False)

    async def audit(self, *, full: bool) -> int:
        """One pass over every ledger; return how many marks it created or widened."""
        async with asyncio.timeout(_CALL_TIMEOUT_S):
            listed = await self._store.list(keys.LEDGER_META_PREFIX)
        ledgers = list(_decoded(listed))
        self._named = frozenset(b for _, meta in ledgers for b in meta.all_bookies())
        due = self._clock_lost(time.monotonic())
        bad = due | self._bk.registry.decommissioning()
        wanted: dict[LedgerId, set[BookieId]] = {}
        for ledger_id, meta in ledgers:
            hit = meta.all_bookies() & bad
            if hit:
                wanted.setdefault(ledger_id, set()).update(hit)
        if full:
            for ledger_id, bookie in await self._lacking(ledgers):
                wanted.setdefault(ledger_id, set()).add(bookie)
            self.audits += 1
        changed = 0
        for ledger_id, bookies in sorted(wanted.items()):
            if not self.is_leader:
                return changed
            if await self._marks.mark(ledger_id, bookies):
                changed += 1
                log.info(
                    "ledger_marked_under_replicated", ledger_id=ledger_id, bookies=sorted(bookies)
                )
        self._handled |= bad
        if full:
            log.info("audit_done", ledgers=len(ledgers), marked=changed, lost=sorted(due))
        return changed

    async def _lacking(
        self, ledgers: list[tuple[LedgerId, LedgerMetadataView]]
    ) -> list[tuple[LedgerId, BookieId]]:
        """(ledger, live bookie) pairs where the bookie lacks entries of a CLOSED ledger."""
        closed = [(lid, meta) for lid, meta in ledgers if meta.is_closed]
        available = self._bk.registry.available()
        named = {b for _, meta in closed for b in meta.all_bookies()} & available
        found = []
        for bookie in sorted(named):
            try:
                listing = await self._bk.pool.client(bookie).list_ledgers(include_ranges=True)
            except BookieUnavailable as exc:
                log.info("audit_bookie_unreachable", bookie_id=bookie, error=str(exc))
                continue
            held = {
                int(item.ledger_id): [(int(r.first), int(r.last)) for r in item.ranges]
                for item in listing
            }
            for ledger_id, meta in closed:
                if bookie in meta.all_bookies() and lacks_entries(
                    meta, bookie, held.get(ledger_id, [])
                ):
                    found.append((ledger_id, bookie))
        return found


def _decoded(
    listed: Iterable[tuple[str, Versioned]],
) -> Iterable[tuple[LedgerId, LedgerMetadataView]]:
    for key, versioned in listed:
        try:
            yield keys.ledger_id_of(key), LedgerMetadataView.decode(versioned.value)
        except (ValueError, InvalidLedgerConfig) as exc:
            log.warning("audit_unreadable_ledger", key=key, error=str(exc))
