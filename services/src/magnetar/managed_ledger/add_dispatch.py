"""The managed ledger's add dispatch: from a queued add to the ledger's write handle and back.

Pulsar's ``OpAddEntry`` path in ``ManagedLedgerImpl``. :class:`AddDispatch` takes an add's slot
(:mod:`.add_queue`), queues the add in call order and :meth:`AddDispatch.pump` hands queued adds
in order to the :class:`CurrentLedger` (the ledger being written): the adds at the head of the
queue go together as one run through the writer's ``append_run`` when it has room (no task, no
future per add; the writer takes the prefix it has room for), else the head waits in a task in
``append``. The writer's verdicts come back per confirmed range of a run
(:meth:`AddDispatch._run_settled`: the owner confirms the range at once,
:meth:`ManagedLedger.entries_confirmed`, and a run queued with :meth:`AddDispatch.enqueue_run`
hears it in one call per stretch) or per add from a task (:meth:`AddDispatch._settle`), which
confirms it with the owner, or fails it, and frees its slot.

Invariants:

* Positions follow call order. Adds leave the queue in order; once one add waits in a task for
  room in the writer, every later add takes the task path too until no task waits, and the
  writer assigns entry ids in the order its ``append`` coroutines start (docs/storage-api.md).
  A slot handed to a waiting add is its own until its task resumes (see :mod:`.add_queue`).
* The rollover policy is asked before each dispatch, with the counts of adds *dispatched* to the
  current ledger, and a run is cut to the room it leaves (``entry_room``/``byte_room``), so a
  run never overshoots a limit a single add would not; when it says so, or no ledger is
  current, or an append failed on the current one, dispatching stops and the owner starts a
  rollover, which waits for :meth:`CurrentLedger.settled` before it closes the ledger; it calls
  :meth:`AddDispatch.pump` again once the next ledger is current. Nothing is lost or
  reordered across a rollover.
* Every dispatched add frees its slot exactly once: on its verdict, or on the cancellation of
  the task that waited for room. ``LedgerFenced`` fences the owner; any other ledger error marks
  the current ledger failed, so the queue rolls over.

Concurrency: the event loop only. The owner (:class:`AddOwner`, the managed ledger) calls in
from its callers' tasks (take a slot, wait for one, enqueue) and from its rollover task (pump,
fail all, swap :attr:`AddDispatch.current`); the writer calls the verdicts back from its
completion callbacks, or they arrive in the append tasks this module starts. Those tasks are
tracked per ledger in :attr:`CurrentLedger.inflight` and awaited by
:meth:`CurrentLedger.settled`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from magnetar.errors import MagnetarError
from magnetar.ids import EntryId, LedgerId
from magnetar.ledger.errors import LedgerFenced
from magnetar.managed_ledger.add_queue import (
    AddCallback,
    AddOp,
    AddQueue,
    RunAddCallback,
    crcs_of,
    datas_of,
    infos_of,
    report_run,
)
from magnetar.managed_ledger.errors import ManagedLedgerFenced
from magnetar.managed_ledger.ledger_access import LedgerWriter
from magnetar.managed_ledger.position import Position
from magnetar.managed_ledger.rollover import RolloverPolicy
from magnetar.tasks import TaskSet
from magnetar.telemetry import get_logger

log = get_logger(__name__)


class AddOwner(Protocol):
    """What the dispatch needs from the managed ledger it dispatches for."""

    @property
    def name(self) -> str: ...

    @property
    def dispatching(self) -> bool:
        """Queued adds may go to the current ledger: open, and no rollover under way."""
        ...

    def check_usable(self) -> None:
        """Raise if adds are refused (fenced or closed)."""
        ...

    def fence(self, reason: str) -> None: ...

    def start_rollover(self) -> None:
        """Start the task that closes the current ledger (if any) and makes the next one
        current; it calls :meth:`AddDispatch.pump` when done."""
        ...

    def entry_confirmed(
        self,
        ledger_id: LedgerId,
        entry_id: EntryId,
        data: bytes,
        lac_floor: int,
        info: object = None,
    ) -> Position:
        """Record a durable entry (layout, cache, readers' signal); return its position.
        ``lac_floor``: the writer's last-add-confirmed when the add was dispatched; ``info``:
        what its adder knew of it (:attr:`AddOp.info`)."""
        ...

    def entries_confirmed(
        self,
        ledger_id: LedgerId,
        first: EntryId,
        datas: list[bytes],
        lac_floor: int,
        infos: Sequence[object] | None = None,
    ) -> list[Position]:
        """:meth:`entry_confirmed` for consecutive entries from ``first`` on, at once (with
        what their adder knew of each, ``infos``, or None)."""
        ...


@dataclass(eq=False)
class CurrentLedger:
    """The ledger adds are dispatched to, and its counts since it was created."""

    writer: LedgerWriter
    created: float = field(default_factory=time.monotonic)
    dispatched: int = 0
    dispatched_bytes: int = 0
    confirmed_bytes: int = 0
    failed: bool = False
    # adds waiting in a task for room in the writer (each leaves the set when its task ends)
    inflight: TaskSet = field(default_factory=lambda: TaskSet("managed_ledger_adds"))
    callbacks: int = 0  # adds dispatched with the writer's append_run, not yet answered
    drained: asyncio.Future[None] | None = None  # set when ``callbacks`` falls to 0

    def callbacks_answered(self, count: int) -> None:
        self.callbacks -= count
        if self.callbacks == 0 and self.drained is not None and not self.drained.done():
            self.drained.set_result(None)

    async def settled(self) -> None:
        """Wait until none of this ledger's adds is in flight (tasks, callbacks)."""
        while self.inflight or self.callbacks:
            if self.inflight:
                await self.inflight.drain()
            if self.callbacks:
                self.drained = asyncio.get_running_loop().create_future()
                await self.drained

    @property
    def ledger_id(self) -> LedgerId:
        return self.writer.ledger_id


RUN_LIMIT = 1024
"""Adds offered to the writer as one run at most (the writer takes up to its batch bound)."""


class _Run:
    """Adds dispatched together with the writer's ``append_run``: answered in order, in one
    or more ranges (``settled`` of them so far)."""

    __slots__ = ("cur", "dispatch", "lac_floor", "ops", "settled")

    def __init__(
        self, dispatch: AddDispatch, cur: CurrentLedger, ops: list[AddOp], lac_floor: int
    ) -> None:
        self.dispatch = dispatch
        self.cur = cur
        self.ops = ops
        self.lac_floor = lac_floor
        self.settled = 0

    def answered(self, first: int, count: int, error: BaseException | None) -> None:
        self.dispatch._run_settled(self, first, count, error)


class AddDispatch:
    """See the module docstring. ``adds.max_pending`` and ``policy`` may change at any time
    (a new config); :attr:`current` is swapped by the owner's rollover."""

    def __init__(self, owner: AddOwner, max_pending: int, policy: RolloverPolicy) -> None:
        self._owner = owner
        self.adds = AddQueue(max_pending)
        self.policy = policy
        self.current: CurrentLedger | None = None

    # ================================================================== accept
    def take_slot(self) -> bool:
        """Take a pending-add slot at once if one is free and nobody waits for one."""
        self._owner.check_usable()
        return self.adds.take_slot()

    def take_slots(self, count: int) -> int:
        """:meth:`take_slot` for up to ``count`` adds: how many slots were taken."""
        self._owner.check_usable()
        return self.adds.take_slots(count)

    async def wait_for_slot(self) -> None:
        """Wait in FIFO order for a slot (:meth:`take_slot` found none free)."""
        await self.adds.wait_for_slot()
        # Granted: the caller queues its add before anything else runs, so its order holds.
        try:
            self._owner.check_usable()
        except MagnetarError:
            self.adds.release_slot()
            raise

    def enqueue(self, data: bytes) -> asyncio.Future[Position]:
        """Queue an add that holds a slot, and dispatch what can go."""
        future: asyncio.Future[Position] = asyncio.get_running_loop().create_future()
        self.adds.ops.append(AddOp(data, future))
        self.pump()
        return future

    def enqueue_callback(
        self, data: bytes, callback: AddCallback, info: object = None, crc: int = -1
    ) -> None:
        """Queue an add that holds a slot and reports to ``callback``; dispatch what can go."""
        self.adds.ops.append(AddOp(data, None, callback, False, None, 0, info, crc))
        self.pump()

    def enqueue_callbacks(self, adds: Sequence[tuple[bytes, AddCallback]], unused: int) -> None:
        """:meth:`enqueue_callback` for a run of adds holding slots (in order), dispatched
        together; ``unused`` more slots taken for the run are given back first."""
        for _ in range(unused):
            self.adds.release_slot()
        self.adds.ops.extend([AddOp(data, None, callback) for data, callback in adds])
        self.pump()

    def enqueue_run(
        self,
        datas: Sequence[bytes],
        callback: RunAddCallback,
        unused: int,
        infos: Sequence[object] | None = None,
        crcs: Sequence[int] | None = None,
    ) -> None:
        """:meth:`enqueue_callbacks` for a run of adds reporting to one ``callback`` (by
        index in ``datas``, a range of durable adds per call); ``infos`` and ``crcs``: see
        :meth:`ManagedLedger.add_reserved_run`."""
        for _ in range(unused):
            self.adds.release_slot()
        count = len(datas)
        if (infos is not None and len(infos) != count) or (crcs is not None and len(crcs) != count):
            raise ValueError("infos and crcs must be parallel to datas")
        self.adds.extend_run(datas, callback, infos, crcs)
        self.pump()

    def fail_all(self, error: BaseException) -> None:
        """Fail every queued (undispatched) add; dispatched ones get the writer's verdict."""
        self.adds.fail_all(error)

    # ================================================================== dispatch
    def pump(self) -> None:
        """Dispatch queued adds in order to the current ledger, or start a rollover."""
        queue = self.adds.ops
        while queue and self._owner.dispatching:
            cur = self.current
            age = 0.0 if cur is None else time.monotonic() - cur.created
            if (
                cur is None
                or cur.failed
                or self.policy.should_rollover(cur.dispatched, cur.dispatched_bytes, age)
            ):
                self._owner.start_rollover()
                return
            op = queue[0]
            if op.abandoned:  # the caller was cancelled before dispatch
                queue.popleft()
                self.adds.release_slot()
                continue
            if not cur.inflight and self._append_run(cur, self._run_at_head(cur, age)):
                continue
            # No room in the writer: a task waits for it. Later adds go the same way until
            # the waiting ones are done, so entry ids keep the queue's order.
            queue.popleft()
            cur.dispatched += 1
            cur.dispatched_bytes += len(op.data)
            cur.inflight.spawn(self._append(cur, op))

    def _run_at_head(self, cur: CurrentLedger, age: float) -> list[AddOp]:
        """The adds at the head of the queue that may go to ``cur`` as one run (not popped):
        not abandoned, within the rollover policy's room, at most :data:`RUN_LIMIT`."""
        policy = self.policy
        limit = min(policy.entry_room(cur.dispatched, age), RUN_LIMIT)
        return self.adds.head_run(limit, policy.byte_room(cur.dispatched_bytes, age))

    def _append_run(self, cur: CurrentLedger, ops: list[AddOp]) -> int:
        """Hand the adds ``ops`` (the queue's head) to the writer's ``append_run`` as one run:
        no task, no future, one callback per confirmed range. Pops and counts what the writer
        took (a prefix, when it has room for only so much); 0: nothing done."""
        if not ops:
            return 0
        lac_floor = cur.writer.last_add_confirmed
        run = _Run(self, cur, ops, lac_floor)
        # The checksums go along when the run's first add has one (a run of big SENDs').
        try:
            taken = cur.writer.append_run(datas_of(ops), run.answered, crcs_of(ops))
        except MagnetarError:  # the task path meets the same error and handles it
            return 0
        if not taken:
            return 0
        if taken < len(ops):
            del ops[taken:]
        size = self.adds.pop_run(taken)
        cur.dispatched += taken
        cur.dispatched_bytes += size
        cur.callbacks += taken
        return taken

    def _run_settled(self, run: _Run, first: int, count: int, error: BaseException | None) -> None:
        """The writer's verdict on ``count`` adds of ``run`` from entry ``first`` on (in id
        order): confirmed together, or failed as :meth:`_settle` fails one."""
        cur = run.cur
        ops = run.ops
        start = run.settled
        run.settled = start + count
        batch = ops if start == 0 and count == len(ops) else ops[start : start + count]
        cur.callbacks_answered(count)
        if error is not None:
            for op in batch:
                self._settle(cur, op, run.lac_floor, error)
            return
        datas = datas_of(batch)
        try:
            positions = self._owner.entries_confirmed(
                cur.ledger_id, EntryId(first), datas, run.lac_floor, infos_of(batch)
            )
            cur.confirmed_bytes += sum(map(len, datas))
            report_run(batch, positions)
        finally:
            self.adds.release_slots(count)
            if cur.failed:
                self.pump()

    async def _append(self, cur: CurrentLedger, op: AddOp) -> None:
        """Dispatch ``op`` in a task that waits for room in the writer."""
        lac_floor = cur.writer.last_add_confirmed
        result: EntryId | BaseException
        try:
            result = await cur.writer.append(op.data)
        except asyncio.CancelledError:
            self._slot_done(cur)
            raise
        except Exception as exc:
            result = exc
        self._settle(cur, op, lac_floor, result)

    # ================================================================== verdicts
    def _settle(
        self, cur: CurrentLedger, op: AddOp, lac_floor: int, result: EntryId | BaseException
    ) -> None:
        """Complete ``op`` with the writer's verdict (both dispatch paths): confirm it, or fail
        it (``LedgerFenced`` fences the owner; another ledger error marks the ledger for
        rollover)."""
        owner = self._owner
        try:
            if isinstance(result, LedgerFenced):
                owner.fence(f"ledger {cur.ledger_id} fenced")
                op.fail(ManagedLedgerFenced(owner.name, str(result)))
            elif isinstance(result, MagnetarError):
                log.warning(
                    "add_failed",
                    managed_ledger=owner.name,
                    ledger_id=cur.ledger_id,
                    error=str(result),
                )
                cur.failed = True
                op.fail(result)
            elif isinstance(result, BaseException):
                op.fail(result)
            else:
                cur.confirmed_bytes += len(op.data)
                position = owner.entry_confirmed(cur.ledger_id, result, op.data, lac_floor, op.info)
                op.resolve(position, None)
        finally:
            self._slot_done(cur)

    def _slot_done(self, cur: CurrentLedger) -> None:
        """An add left the writer: free its slot; after a failure, the queue rolls over."""
        self.adds.release_slot()
        if cur.failed:
            self.pump()
