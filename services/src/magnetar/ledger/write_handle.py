"""A ledger open for writing (BookKeeper's ``LedgerHandle`` add path).

``append()`` (or ``append_nowait()``, its task-free form when there is room, or
``append_callback()``, its future-free form, or ``append_run()`` for consecutive entries at
once) assigns entry ids in call order (after a FIFO wait for room: pending adds are bounded in
count and bytes), sends entry ``e`` to the Wq bookies striped from position ``e mod E`` of the
current ensemble over each bookie's add stream, and reports once the entry and every earlier
one has Aq acks (the :class:`AddTracker` core decides). Each add carries the handle's
last-add-confirmed.

Every call adds a *run* (a single append is a run of one): one pending record with its entry id
range and payloads, one ``send_adds`` per bookie, one answer per bookie (the OKs before its first
other status are acks, the rest takes the failure path), and completions as confirmed ranges
(``callback(first, count, error)``), so the layers above settle a run with one call.

A failed bookie (stream error, timeout, or a status other than OK/FENCED) triggers an ensemble
change, run by one task at a time: confirmations freeze, a replacement is chosen, the ledger
metadata gets a new segment starting at LAC+1 by compare-and-set, and every unconfirmed entry
of the failed positions is resent to the replacement. FENCED (or losing the metadata CAS to a
recovery) fails every pending and future add with :class:`LedgerFenced`.

``close()`` waits for pending adds, then writes state CLOSED with the last entry id and length
by compare-and-set. A handle made by recovery (``recovery=True``) sends recovery adds, expects
state IN_RECOVERY, and accepts another client's close of the ledger.

Concurrency: every method runs on the loop; add results arrive as callbacks from the bookie
clients' tasks and only touch the tracker synchronously. The handle owns its ensemble-change
task and cancels it when closed or failed.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import time
from collections.abc import Callable, Mapping, Sequence

from magnetar.backoff import BOOKIE_RPC
from magnetar.errors import MagnetarError
from magnetar.ids import BookieId, EntryId
from magnetar.ledger.bookie_client import AddRequest
from magnetar.ledger.bookie_registry import BookiePool, BookieRegistry
from magnetar.ledger.config import LedgerClientConfig
from magnetar.ledger.digest import add_requests
from magnetar.ledger.errors import (
    BookieUnavailable,
    LedgerClosed,
    LedgerError,
    LedgerFenced,
    NotEnoughBookies,
)
from magnetar.ledger.ledger_manager import LedgerManager
from magnetar.ledger.metadata import (
    Ensemble,
    LedgerMetadataView,
    LedgerState,
    VersionedLedgerMetadata,
)
from magnetar.ledger.pending_adds import AddTracker, Confirmed, PendingRun, RunCallback
from magnetar.ledger.placement import replace_bookie
from magnetar.metadata import BadVersion
from magnetar.telemetry import get_logger
from magnetar.wire import bookie_pb2

log = get_logger(__name__)


class WriteHandle:
    def __init__(
        self,
        meta: VersionedLedgerMetadata,
        *,
        pool: BookiePool,
        registry: BookieRegistry,
        manager: LedgerManager,
        config: LedgerClientConfig,
        recovery: bool = False,
        last_add_confirmed: int = -1,
        length: int = 0,
        load: Callable[[], Mapping[BookieId, int]] | None = None,
        on_closed: Callable[[WriteHandle], None] | None = None,
    ) -> None:
        view = meta.metadata
        self.ledger_id = meta.ledger_id
        self._meta = meta
        self._pool = pool
        self._registry = registry
        self._manager = manager
        self._config = config
        self._recovery = recovery
        self._load = load
        self._on_closed = on_closed
        self._expected_state = LedgerState.IN_RECOVERY if recovery else LedgerState.OPEN
        self._tracker = AddTracker(
            view.current_ensemble, view.write_quorum, view.ack_quorum, last_add_confirmed, length
        )
        self._loop = asyncio.get_running_loop()
        self._master_key = view.master_key
        self._failed: set[BookieId] = set()  # current members that failed, awaiting a change
        self._change_task: asyncio.Task[None] | None = None
        self._error: LedgerError | None = None
        self._closing = False
        self._closed = False
        self._reserved_count = 0
        self._reserved_bytes = 0
        self._waiters: collections.deque[tuple[int, asyncio.Future[None]]] = collections.deque()
        self._idle = asyncio.Event()
        self._idle.set()

    @property
    def last_add_confirmed(self) -> EntryId:
        return EntryId(self._tracker.last_add_confirmed)

    @property
    def length(self) -> int:
        return self._tracker.length

    @property
    def metadata(self) -> LedgerMetadataView:
        return self._meta.metadata

    # ------------------------------------------------------------------ append

    async def append(self, payload: bytes) -> EntryId:
        """Add ``payload`` as the next entry; return its id once confirmed (in id order)."""
        future = self.append_nowait(payload)
        if future is None:
            size = len(payload)
            await self._wait_for_room(size)
            if self._error is not None or self._closing:
                self._release(size)
                self._check_writable()
            future = self._start_future(payload, size)
        # No shield: a caller that gives up cancels only this future (nobody else awaits it),
        # and the completion skips futures that are already done; the add itself goes on.
        return await future

    def append_nowait(self, payload: bytes) -> asyncio.Future[EntryId] | None:
        """:meth:`append` without a coroutine: the entry's id future, or None (nothing done)
        when the pending-add bounds have no room now or earlier callers are waiting for room
        (then use :meth:`append`, which keeps their FIFO order). Raises like :meth:`append`."""
        size = len(payload)
        if not self._reserve_now(size):
            return None
        return self._start_future(payload, size)

    def append_callback(
        self, payload: bytes, callback: Callable[[EntryId | BaseException], None]
    ) -> bool:
        """:meth:`append_nowait` without a future: ``callback(entry_id)`` once the entry and
        every earlier one are confirmed, or ``callback(error)`` if the handle fails first.
        The callback runs synchronously inside the handle's completion (never before this
        returns; entries in id order), so it must be quick and must not raise; it may append
        again. False (nothing done) when there is no room now, as :meth:`append_nowait`'s
        None. Raises like :meth:`append`."""
        size = len(payload)
        if not self._reserve_now(size):
            return False
        self._start([payload], size, None, callback)  # type: ignore[arg-type]  # EntryId is int
        return True

    def append_run(
        self,
        payloads: Sequence[bytes],
        callback: RunCallback,
        crcs: Sequence[int] | None = None,
    ) -> int:
        """Add the longest prefix of ``payloads`` that has room now as consecutive entries
        travelling as one run (one send per bookie, one answer per bookie, one completion
        per confirmed range); return how many were taken (0: none, nothing done, as
        :meth:`append_callback`'s False; the caller offers the rest again or waits in
        :meth:`append`).

        ``callback(first_entry_id, count, None)`` reports each confirmed range of the run in
        id order (the whole run at once when its quorum answers together, else in pieces),
        ``callback(first_entry_id, count, error)`` the rest of the run if the handle fails
        first. It runs synchronously inside the handle's completion (never before this
        returns), must be quick and must not raise; it may append again. A run is at most
        ``max_batch_entries`` entries and ``max_batch_bytes`` (but at least one entry), within
        the pending-add bounds. Raises like :meth:`append`."""
        self._check_writable()
        if self._waiters:
            return 0
        config = self._config
        limit = min(config.max_pending_adds - self._reserved_count, config.max_batch_entries)
        room = config.max_pending_add_bytes - self._reserved_bytes
        batch_bytes = config.max_batch_bytes
        taken = 0
        size = 0
        for payload in payloads:
            if taken >= limit:
                break
            grown = size + len(payload)
            if grown > room and (taken or self._reserved_count):
                break
            if taken and grown > batch_bytes:
                break
            taken += 1
            size = grown
        if not taken:
            return 0
        self._reserved_count += taken
        self._reserved_bytes += size
        self._start(list(payloads[:taken]), size, callback, None, crcs)
        return taken

    def _start(
        self,
        payloads: list[bytes],
        size: int,
        callback: RunCallback | None,
        single: Callable[[int | BaseException], None] | None = None,
        crcs: Sequence[int] | None = None,
    ) -> None:
        """Assign the next entry ids to ``payloads`` (``size`` bytes, room reserved by the
        caller) and send them as one run; ``callback`` gets its outcome (or ``single``, for a
        run of one from :meth:`append_callback`: no wrapper per add). ``crcs`` (parallel to
        ``payloads``, at least as long): each payload's ``crc32c`` where the caller checked
        it (-1 where not), from which its digest is combined without reading it."""
        tracker = self._tracker
        run = tracker.new_run(payloads, size)
        run.callback = callback
        run.single = single
        # The requests (and their digests: the one checksum of a payload on the add path) are
        # built once per entry, shared by every replica's send and any resend.
        add_requests(
            run.requests, self.ledger_id, run.first, run.last_add_confirmed, payloads, crcs,
            self._master_key, self._recovery,
        )  # fmt: skip
        self._idle.clear()
        if not tracker.changing:
            for bookie, adds in tracker.sends(run, run.first):
                self._send(run, bookie, adds)

    def _start_future(self, payload: bytes, size: int) -> asyncio.Future[EntryId]:
        future: asyncio.Future[EntryId] = self._loop.create_future()
        self._start([payload], size, functools.partial(_future_outcome, future))
        return future

    def _reserve_now(self, size: int) -> bool:
        """Reserve room for an add of ``size`` at once, if there is room and nobody waits for
        it; raises like :meth:`append` when the handle is not writable."""
        self._check_writable()
        if self._waiters or not self._has_room(size):
            return False
        self._reserved_count += 1
        self._reserved_bytes += size
        return True

    def _check_writable(self) -> None:
        if self._error is not None:
            raise self._error
        if self._closing:
            raise LedgerClosed(self.ledger_id)

    def _has_room(self, size: int) -> bool:
        if self._reserved_count >= self._config.max_pending_adds:
            return False
        return (
            self._reserved_count == 0
            or self._reserved_bytes + size <= self._config.max_pending_add_bytes
        )

    async def _wait_for_room(self, size: int) -> None:
        """Wait in FIFO order until room for ``size`` is reserved (:meth:`append_nowait` found
        none)."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((size, waiter))
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._release(size)  # woken and reserved, but the caller gave up
            else:
                self._waiters.remove((size, waiter))
            raise

    def _release(self, size: int) -> None:
        self._reserved_count -= 1
        self._reserved_bytes -= size
        self._wake_waiters()

    def _wake_waiters(self) -> None:
        while self._waiters:
            size, waiter = self._waiters[0]
            if self._error is None and not self._closing and not self._has_room(size):
                return
            self._waiters.popleft()
            if not waiter.done():
                self._reserved_count += 1
                self._reserved_bytes += size
                waiter.set_result(None)

    # ------------------------------------------------------------------ bookie I/O

    def _send(self, run: PendingRun, bookie: BookieId, adds: list[AddRequest]) -> None:
        try:
            client = self._pool.client(bookie)
        except BookieUnavailable as exc:
            self._tracker.forget(run, bookie, adds[0].entry_id)
            self._bookie_failed(bookie, str(exc))
            return
        client.send_adds(adds, functools.partial(self._on_results, run, bookie, adds))

    def _on_results(
        self,
        run: PendingRun,
        bookie: BookieId,
        adds: list[AddRequest],
        result: list[int] | BaseException,
    ) -> None:
        """``bookie``'s answer to the sub-run ``adds`` of ``run``: a status per add (in order)
        or the error that failed them all. The OKs before the first other status count as
        acks; that add and the rest take the failure path."""
        if self._error is not None:
            return
        failure: int | BaseException
        if isinstance(result, BaseException):
            ok = 0
            failure = result
        else:
            ok = len(result)
            if result.count(bookie_pb2.OK) != ok:
                ok = next(i for i, status in enumerate(result) if status != bookie_pb2.OK)
            if ok == len(adds):
                self._complete(self._tracker.on_acks(run, bookie, adds[-1].entry_id))
                return
            failure = result[ok]
        if ok:
            self._complete(self._tracker.on_acks(run, bookie, adds[ok - 1].entry_id))
            if self._failed_meanwhile():  # a completion's callback may have failed the handle
                return
        if failure == bookie_pb2.FENCED and not self._recovery:
            log.warning("ledger_fenced", ledger_id=self.ledger_id, bookie_id=bookie)
            self._fail(LedgerFenced(self.ledger_id))
            return
        self._tracker.forget(run, bookie, adds[ok].entry_id)
        reason = (
            str(failure)
            if isinstance(failure, BaseException)
            else bookie_pb2.Status.Name(bookie_pb2.Status.ValueType(failure))
        )
        self._bookie_failed(bookie, reason)

    def _failed_meanwhile(self) -> bool:
        return self._error is not None

    def _bookie_failed(self, bookie: BookieId, reason: str) -> None:
        if bookie not in self._tracker.ensemble or bookie in self._failed:
            return
        log.warning("bookie_failed", ledger_id=self.ledger_id, bookie_id=bookie, reason=reason)
        self._failed.add(bookie)
        self._pool.quarantine(bookie)
        self._tracker.begin_change()
        if self._change_task is None or self._change_task.done():
            self._change_task = asyncio.get_running_loop().create_task(
                self._change_ensemble(), name=f"ensemble-change-{self.ledger_id}"
            )

    def _complete(self, confirmed: list[Confirmed]) -> None:
        if confirmed:
            # Room first: a callback below may append again.
            count = 0
            size = 0
            for _run, low, high, nbytes in confirmed:
                count += high - low + 1
                size += nbytes
            self._reserved_count -= count
            self._reserved_bytes -= size
            if self._waiters:
                self._wake_waiters()
        if self._tracker.pending_count == 0:
            self._idle.set()
        for run, low, high, _nbytes in confirmed:
            single = run.single
            if single is not None:  # a run of one
                single(low)
                continue
            callback = run.callback
            assert callback is not None  # set by _start
            callback(low, high - low + 1, None)

    def _fail(self, error: LedgerError) -> None:
        if self._error is not None:
            return
        self._error = error
        drained = self._tracker.drain()
        self._reserved_count = 0
        self._reserved_bytes = 0
        self._wake_waiters()
        self._idle.set()
        task = self._change_task
        if task is not None and task is not asyncio.current_task():
            task.cancel()
        for run in drained:
            single = run.single
            if single is not None:
                single(error)
                continue
            callback = run.callback
            assert callback is not None  # set by _start
            callback(run.confirmed + 1, run.last - run.confirmed, error)

    # ------------------------------------------------------------------ ensemble change

    async def _change_ensemble(self) -> None:
        try:
            await self._change_ensemble_until_done()
        except Exception as exc:  # a bug must not leave the handle frozen forever
            log.exception("ensemble_change_crashed", ledger_id=self.ledger_id)
            self._fail(LedgerClosed(self.ledger_id, f"ensemble change failed: {exc!r}"))

    async def _change_ensemble_until_done(self) -> None:
        deadline = time.monotonic() + self._config.ensemble_change_timeout_s
        # Not retry(): the loop ends when the ensemble is healthy or the handle failed, and a
        # fenced ledger or the deadline fails the handle rather than raising.
        backoff = BOOKIE_RPC.backoff()
        while self._error is None and self._failed & set(self._tracker.ensemble):
            try:
                await self._change_once()
                backoff.reset()
            except MagnetarError as exc:  # NotEnoughBookies included
                if isinstance(exc, LedgerFenced):
                    self._fail(exc)
                    return
                if time.monotonic() > deadline:
                    log.error("ensemble_change_failed", ledger_id=self.ledger_id, error=str(exc))
                    self._fail(
                        exc
                        if isinstance(exc, LedgerError)
                        else LedgerClosed(self.ledger_id, str(exc))
                    )
                    return
                log.warning("ensemble_change_retry", ledger_id=self.ledger_id, error=str(exc))
                await asyncio.sleep(backoff.next())

    def _replacement(self, failed_now: set[BookieId], avoid: set[BookieId]) -> Ensemble:
        ensemble = self._tracker.ensemble
        for bookie in sorted(failed_now):
            ensemble = replace_bookie(
                ensemble,
                ensemble.index(bookie),
                self._registry.writable(),
                failed=avoid,
                policy=self._config.placement_policy,
                load=self._load() if self._load is not None else None,
                racks=self._registry.racks(),
            )
        return ensemble

    async def _change_once(self) -> None:
        failed_now = self._failed & set(self._tracker.ensemble)
        try:
            ensemble = self._replacement(failed_now, self._failed | self._pool.quarantined())
        except NotEnoughBookies:  # rather a recently failed (now registered) bookie than none
            ensemble = self._replacement(failed_now, self._failed)
        first = self._tracker.last_add_confirmed + 1
        try:
            self._meta = await self._manager.write(
                self._meta, self._meta.metadata.with_ensemble_change(EntryId(first), ensemble)
            )
        except BadVersion:
            current = await self._manager.read(self._meta.ledger_id)
            if current.metadata.state is not self._expected_state:
                raise LedgerFenced(self.ledger_id) from None
            self._meta = current
            raise
        log.info(
            "ensemble_changed",
            ledger_id=self.ledger_id,
            first_entry_id=first,
            replaced=sorted(failed_now),
            ensemble=list(ensemble),
        )
        self._failed -= failed_now
        confirmed = self._tracker.apply_ensemble(ensemble)
        if self._failed & set(ensemble):
            self._tracker.begin_change()  # more failures arrived during the metadata write
        for run, bookie, adds in self._tracker.unsent():
            self._send(run, bookie, adds)
        self._complete(confirmed)

    # ------------------------------------------------------------------ close

    async def close(self) -> None:
        """Wait for pending adds, then mark the ledger CLOSED at the last confirmed entry."""
        if self._closed:
            return
        self._closing = True
        self._wake_waiters()
        try:
            async with asyncio.timeout(
                self._config.add_timeout_s + self._config.ensemble_change_timeout_s
            ):
                await self._idle.wait()
        except TimeoutError:
            self._fail(LedgerClosed(self.ledger_id, "pending adds did not complete before close"))
        self._mark_closed()
        if self._change_task is not None:
            self._change_task.cancel()
            await asyncio.wait({self._change_task})
        if isinstance(self._error, LedgerFenced):
            log.info("ledger_close_skipped_fenced", ledger_id=self.ledger_id)
            return
        await self._write_closed()

    def _mark_closed(self) -> None:
        self._closed = True
        if self._on_closed is not None:
            self._on_closed(self)

    async def abandon(self) -> None:
        """Stop without touching the metadata: fail pending adds, stop the ensemble change."""
        self._closing = True
        self._mark_closed()
        self._fail(LedgerClosed(self.ledger_id, "abandoned"))
        if self._change_task is not None:
            self._change_task.cancel()
            await asyncio.wait({self._change_task})

    async def _write_closed(self) -> None:
        last = self._tracker.last_add_confirmed
        while True:
            closed = self._meta.metadata.closed_at(EntryId(last), self._tracker.length)
            try:
                self._meta = await self._manager.write(self._meta, closed)
                log.info("ledger_closed", ledger_id=self.ledger_id, last_entry_id=last)
                return
            except BadVersion:
                current = await self._manager.read(self._meta.ledger_id)
            state = current.metadata.state
            if state is LedgerState.CLOSED and (
                self._recovery or current.metadata.last_entry_id == last
            ):
                self._meta = current  # someone else closed it (a racing recovery): accept theirs
                return
            if state is not self._expected_state:
                raise LedgerFenced(self.ledger_id)
            self._meta = current


def _future_outcome(
    future: asyncio.Future[EntryId], first: int, count: int, error: BaseException | None
) -> None:
    """A run of one's outcome as :meth:`WriteHandle.append` reports it."""
    if future.done():  # the caller gave up
        return
    if error is None:
        future.set_result(EntryId(first))
    else:
        future.set_exception(error)
        future.exception()  # mark retrieved: a caller that gave up is not an error
