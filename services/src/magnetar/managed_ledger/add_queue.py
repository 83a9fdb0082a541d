"""The managed ledger's add queue: queued adds in call order behind a FIFO gate of slots.

Pulsar's ``pendingAddEntries`` with ``maxPendingAdds`` backpressure. Every add holds one of
``max_pending`` slots from the moment it is accepted until the writer's verdict on it (or its
failure before dispatch). :meth:`AddQueue.take_slot` takes a free slot at once; when none is
free, :meth:`AddQueue.wait_for_slot` waits in FIFO order. :attr:`AddQueue.ops` holds the
accepted adds not yet dispatched, in call order; :mod:`.add_dispatch` pops them to dispatch.

Invariants:

* At most ``max_pending`` slots are held (a lowered limit lets the surplus drain first).
* Slots go to waiters in the order they started waiting, and a slot handed to a waiter is its
  own until its task resumes: :meth:`take_slot` refuses while any waiter is queued or a granted
  slot has not been claimed, so an add arriving in between cannot overtake the waiter (it used
  to, and SENDs were stored out of order under backpressure).
* An :class:`AddOp` reports its outcome exactly once: through its future, or by calling its
  callback (whose own failure is logged, never raised into the writer's completion).

The per-add loops of a run (:meth:`AddQueue.extend_run`, :meth:`AddQueue.head_run`,
:meth:`AddQueue.pop_run`, :func:`datas_of` and the rest, :func:`report_run`) are here, compiled
with the queue (mypyc), where each add's fields are read natively: :mod:`.add_dispatch` calls
them once a run.

Concurrency: the event loop only, no tasks of its own. Called by
:class:`magnetar.managed_ledger.add_dispatch.AddDispatch` from the managed ledger's callers'
tasks (accept, wait), from the writer's completion callbacks and its own append tasks (release)
and from the managed ledger's fence, rollover task and close (fail all).
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable, Sequence

from magnetar.managed_ledger.position import Position
from magnetar.telemetry import get_logger

log = get_logger(__name__)

AddCallback = Callable[[Position | None, BaseException | None], None]
RunAddCallback = Callable[[int, "list[Position] | None", "BaseException | None"], None]
"""The outcome of adds queued as a run (:meth:`ManagedLedger.add_reserved_run`), in order:
``(index, positions, None)`` for the adds ``index .. index + len(positions) - 1`` of the run,
durable; ``(index, None, error)`` for add ``index``, failed."""


class AddOp:
    """One queued add and who hears its outcome: a future (:meth:`ManagedLedger.add_entry`)
    or a callback, called at once when the writer's verdict arrives
    (:meth:`ManagedLedger.add_entry_callback`: no future and no loop hop per add), or the
    callback of the run it was queued in (:meth:`ManagedLedger.add_reserved_run`: one call
    per confirmed range of adds).

    A plain class with its own ``__init__``, not a dataclass: compiled, its construction is
    native, where a dataclass's generated ``__init__`` is Python code (one is built per add)."""

    __slots__ = ("callback", "crc", "data", "future", "index", "info", "resolved", "run")

    def __init__(
        self,
        data: bytes,
        future: asyncio.Future[Position] | None = None,
        callback: AddCallback | None = None,
        resolved: bool = False,
        run: RunAddCallback | None = None,
        index: int = 0,
        info: object = None,
        crc: int = -1,
    ) -> None:
        self.data = data
        self.future = future
        self.callback = callback
        self.resolved = resolved
        self.run = run  # an add of a run: its callback, and its index in it
        self.index = index
        self.info = info  # what the adder knows of the entry, for the cache (Entry.info)
        self.crc = crc  # crc32c(data) where the adder checked it, else -1 (the entry digest)

    @property
    def abandoned(self) -> bool:
        """The caller gave up (its future was cancelled) before the add was dispatched."""
        return self.future is not None and self.future.done()

    def resolve(self, position: Position | None, error: BaseException | None) -> None:
        """Report the outcome once; a callback's own failure is logged, not raised."""
        if self.resolved:
            return
        self.resolved = True
        future = self.future
        if future is not None:
            if future.done():
                return
            if error is None:
                future.set_result(position)  # type: ignore[arg-type]
            elif isinstance(error, asyncio.CancelledError):
                future.cancel()
            else:
                future.set_exception(error)
            return
        try:
            if self.run is not None:
                self.run(self.index, None if position is None else [position], error)
            else:
                assert self.callback is not None
                self.callback(position, error)
        except Exception as exc:
            log.error("add_callback_failed", error=repr(exc))

    def fail(self, error: BaseException) -> None:
        self.resolve(None, error)


class AddQueue:
    """See the module docstring. ``max_pending`` may change at any time (a new config)."""

    def __init__(self, max_pending: int) -> None:
        self.max_pending = max_pending
        self.ops: collections.deque[AddOp] = collections.deque()
        self._used = 0
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        # Waiters handed a slot whose task has not resumed yet: their adds come first.
        self._granted = 0

    def take_slot(self) -> bool:
        """Take a slot at once if one is free and nobody waits for one."""
        if self._waiters or self._granted or self._used >= self.max_pending:
            return False
        self._used += 1
        return True

    def take_slots(self, count: int) -> int:
        """Take up to ``count`` free slots at once (none if anybody waits for one); return how
        many were taken."""
        if self._waiters or self._granted:
            return 0
        taken = max(0, min(count, self.max_pending - self._used))
        self._used += taken
        return taken

    async def wait_for_slot(self) -> None:
        """Wait in FIFO order for a slot (:meth:`take_slot` found none free). Once granted the
        caller holds it and must queue its add before anything else runs, so its order holds."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._granted -= 1
                self.release_slot()
            else:
                self._waiters.remove(waiter)
            raise
        self._granted -= 1

    def release_slot(self) -> None:
        """An add is done with its slot: hand free slots to waiters, oldest first."""
        self.release_slots(1)

    def release_slots(self, count: int) -> None:
        """:meth:`release_slot` for ``count`` adds done at once (a run)."""
        self._used -= count
        while self._waiters and self._used < self.max_pending:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self._used += 1
                self._granted += 1
                waiter.set_result(None)

    def extend_run(
        self,
        datas: Sequence[bytes],
        run: RunAddCallback,
        infos: Sequence[object] | None,
        crcs: Sequence[int] | None,
    ) -> None:
        """Queue an add of ``run`` for each of ``datas`` (its index in the run: its index
        here); ``infos``, ``crcs``: parallel to ``datas`` (checked by the caller), or None."""
        ops = self.ops
        for i in range(len(datas)):
            ops.append(
                AddOp(
                    datas[i],
                    None,
                    None,
                    False,
                    run,
                    i,
                    None if infos is None else infos[i],
                    -1 if crcs is None else crcs[i],
                )
            )

    def head_run(self, limit: int, byte_room: int) -> list[AddOp]:
        """The adds at the head of the queue (not popped) up to the first abandoned one, at
        most ``limit`` of them, and none once ``byte_room`` bytes are reached before it."""
        run: list[AddOp] = []
        size = 0
        for op in self.ops:
            if size >= byte_room or op.abandoned:
                break
            run.append(op)
            if len(run) >= limit:
                break
            size += len(op.data)
        return run

    def pop_run(self, count: int) -> int:
        """Pop the ``count`` adds at the head of the queue (dispatched); their bytes."""
        ops = self.ops
        size = 0
        for _ in range(count):
            size += len(ops.popleft().data)
        return size

    def fail_all(self, error: BaseException) -> None:
        """Fail every queued (undispatched) add with ``error`` and free its slot."""
        ops = self.ops
        while ops:
            ops.popleft().fail(error)
            self.release_slot()


def datas_of(ops: list[AddOp]) -> list[bytes]:
    """Each add's payload, in order."""
    return [op.data for op in ops]


def infos_of(ops: list[AddOp]) -> list[object]:
    """Each add's :attr:`AddOp.info`, in order."""
    return [op.info for op in ops]


def crcs_of(ops: list[AddOp]) -> list[int] | None:
    """Each add's :attr:`AddOp.crc`, in order; None when the first has none (-1): a run of
    big SENDs has them all, a run of small ones none."""
    if not ops or ops[0].crc < 0:
        return None
    return [op.crc for op in ops]


def report_run(ops: list[AddOp], positions: list[Position]) -> None:
    """Resolve ``ops`` (durable at ``positions``): one call per stretch of consecutive adds
    of one run (:meth:`AddQueue.extend_run`), else one per add. A run callback's own failure
    is logged, as :meth:`AddOp.resolve` logs a callback's."""
    count = len(ops)
    i = 0
    while i < count:
        op = ops[i]
        callback = op.run
        if callback is None:
            op.resolve(positions[i], None)
            i += 1
            continue
        j = i + 1
        index = op.index
        while j < count and ops[j].run is callback and ops[j].index == index + j - i:
            j += 1
        for k in range(i, j):
            ops[k].resolved = True
        try:
            callback(index, positions[i:j], None)
        except Exception as exc:
            log.error("add_callback_failed", error=repr(exc))
        i = j
