"""The replication worker (BookKeeper's ``ReplicationWorker``): one per autorecovery process.

Each round lists the under-replication marks (:mod:`.marks`) in a random order (so that several
workers start on different ledgers) and, for each, tries to take the ledger's replication lock:
an ephemeral key at ``keys.lock("replication-<ledger id>")`` created only if absent, so at most
one worker in the cluster holds it, and it vanishes with a crashed worker's session. Holding
it, the worker re-reads the mark, runs :meth:`LedgerReplicator.replicate`, removes the mark at
the version it read when the ledger is repaired (a mark widened meanwhile stays), and deletes
the lock. A ledger that was deleted meanwhile just loses its mark. A ledger whose round failed
is left alone for a pause that doubles on each failure (jittered, at most 30 s);
one whose open tail waits for its live writer is looked at again after ``writer_wait_s``.

Every lock taken and released is logged (``replication_lock_acquired`` /
``replication_lock_released``, with the worker id and wall-clock times): the record tests use
to prove two workers never hold one ledger at once.

Concurrency: :meth:`ReplicationWorker.run` is one task in the process's TaskGroup; ledgers are
replicated one after another within it.
"""

from __future__ import annotations

import asyncio
import random
import time

from magnetar.autorecovery.marks import UnderReplicationMark, UnderReplicationMarks
from magnetar.autorecovery.replicator import LedgerReplicator, ReplicationStats
from magnetar.errors import MagnetarError
from magnetar.ids import LedgerId
from magnetar.ledger.errors import NoSuchLedger
from magnetar.metadata import BadVersion, KeyExists, MetadataStore, NotFound, keys
from magnetar.telemetry import get_logger

log = get_logger(__name__)

_FIRST_PAUSE_S = 1.0
_MAX_PAUSE_S = 30.0
_CALL_TIMEOUT_S = 10.0


def replication_lock(ledger_id: LedgerId) -> str:
    return keys.lock(f"replication-{ledger_id:020d}")


class ReplicationWorker:
    def __init__(
        self,
        store: MetadataStore,
        replicator: LedgerReplicator,
        stats: ReplicationStats,
        worker_id: str,
        *,
        poll_s: float = 1.0,
        writer_wait_s: float = 5.0,
    ) -> None:
        self._store = store
        self._marks = UnderReplicationMarks(store)
        self._replicator = replicator
        self._stats = stats
        self.worker_id = worker_id
        self._poll_s = poll_s
        self._writer_wait_s = writer_wait_s
        self._not_before: dict[LedgerId, float] = {}
        self._pauses: dict[LedgerId, float] = {}

    async def run(self) -> None:
        """Rounds forever (cancel to stop); store trouble is logged and the round retried."""
        while True:
            try:
                await self.round()
            except (MagnetarError, TimeoutError) as exc:
                log.warning("replication_round_failed", error=repr(exc))
            except Exception:  # a bug must not end the worker: logged, the next round retries
                log.exception("replication_round_crashed")
            await asyncio.sleep(self._poll_s)

    async def round(self) -> int:
        """Look at every mark once; return how many ledgers this round repaired."""
        async with asyncio.timeout(_CALL_TIMEOUT_S):
            marks = await self._marks.list()
        random.shuffle(marks)
        now = time.monotonic()
        repaired = 0
        for mark in marks:
            if self._not_before.get(mark.ledger_id, 0.0) > now:
                continue
            if await self._under_lock(mark.ledger_id):
                repaired += 1
        live = {m.ledger_id for m in marks}
        for gone in set(self._not_before) - live:
            self._not_before.pop(gone, None)
            self._pauses.pop(gone, None)
        return repaired

    async def _under_lock(self, ledger_id: LedgerId) -> bool:
        key = replication_lock(ledger_id)
        try:
            async with asyncio.timeout(_CALL_TIMEOUT_S):
                version = await self._store.create(key, self.worker_id.encode(), ephemeral=True)
        except KeyExists:
            return False  # another worker has it
        log.info(
            "replication_lock_acquired",
            ledger_id=ledger_id,
            worker=self.worker_id,
            at=time.time(),
        )
        try:
            return await self._replicate(ledger_id)
        finally:
            log.info(
                "replication_lock_released",
                ledger_id=ledger_id,
                worker=self.worker_id,
                at=time.time(),
            )
            try:
                async with asyncio.timeout(_CALL_TIMEOUT_S):
                    await self._store.delete(key, version)
            except (NotFound, BadVersion):
                log.warning("replication_lock_lost", ledger_id=ledger_id)

    async def _replicate(self, ledger_id: LedgerId) -> bool:
        mark = await self._marks.get(ledger_id)  # re-read under the lock
        if mark is None:
            return False
        try:
            outcome = await self._replicator.replicate(ledger_id, set(mark.missing))
        except NoSuchLedger:
            log.info("replication_ledger_deleted", ledger_id=ledger_id)
            await self._marks.remove(mark)
            return False
        except (MagnetarError, TimeoutError) as exc:  # ReplicationFailed among them
            self._pause(ledger_id)
            log.warning("replication_failed", ledger_id=ledger_id, error=str(exc))
            return False
        if outcome.remaining:
            if outcome.waiting_for_writer:
                self._not_before[ledger_id] = time.monotonic() + self._writer_wait_s
                log.debug(
                    "replication_waits_for_writer",
                    ledger_id=ledger_id,
                    bookies=sorted(outcome.remaining),
                )
            else:
                self._pause(ledger_id)
            return False
        return await self._done(mark)

    async def _done(self, mark: UnderReplicationMark) -> bool:
        self._not_before.pop(mark.ledger_id, None)
        self._pauses.pop(mark.ledger_id, None)
        if await self._marks.remove(mark):
            self._stats.ledgers_repaired += 1
            log.info("ledger_rereplicated", ledger_id=mark.ledger_id, replaced=list(mark.missing))
            return True
        return False  # widened meanwhile: the next round looks again

    def _pause(self, ledger_id: LedgerId) -> None:
        pause = min(_MAX_PAUSE_S, self._pauses.get(ledger_id, _FIRST_PAUSE_S / 2) * 2)
        self._pauses[ledger_id] = pause
        self._not_before[ledger_id] = time.monotonic() + pause * random.uniform(0.5, 1.0)
