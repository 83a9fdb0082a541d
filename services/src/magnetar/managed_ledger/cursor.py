"""A cursor over a managed ledger (Pulsar's ManagedCursor): reads, acks, seek, persistence.

The state lives in a :class:`CursorState` (pure); this shell reads entries through its managed
ledger and persists the state of durable cursors to ``keys.cursor(ml, name)`` as a
ManagedCursorInfo, by compare-and-set on the version it last wrote.

Persistence (durable cursors): :meth:`ManagedCursor.mark_delete`, :meth:`delete` and
:meth:`reset` change the state at once, then return only when a write that includes the change
is durable. Writes are coalesced: at most one is in flight; callers that change the state
meanwhile queue on a FIFO lock and the first of them writes the newest state for all. A
``BadVersion`` means another owner wrote the cursor: the managed ledger becomes fenced. The
write runs in a task the cursor owns (shielded), so a cancelled caller never leaves the version
unknown. The read position is not persisted: on reopen it restarts after the mark-delete.

Non-durable cursors (readers) skip persistence and do not hold back trimming.

Concurrency: all methods run on the managed ledger's loop; reads of one cursor are serialised
by a lock so that two concurrent reads never hand out the same entries.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from magnetar.managed_ledger.codec import cursor_info_of, encode_cursor_info
from magnetar.managed_ledger.cursor_state import CursorState
from magnetar.managed_ledger.entry_cache import Entry
from magnetar.managed_ledger.errors import CursorClosed, ManagedLedgerFenced
from magnetar.managed_ledger.position import Position
from magnetar.metadata import keys
from magnetar.metadata.errors import BadVersion
from magnetar.telemetry import get_logger

if TYPE_CHECKING:
    from magnetar.managed_ledger.managed_ledger import ManagedLedger

log = get_logger(__name__)


class ManagedCursor:
    """One subscription's (or reader's) position in a managed ledger."""

    def __init__(
        self,
        ml: ManagedLedger,
        name: str,
        state: CursorState,
        *,
        durable: bool,
        version: int | None = None,
        properties: Mapping[str, int] | None = None,
    ) -> None:
        self._ml = ml
        self.name = name
        self.durable = durable
        self._state = state
        self._properties: dict[str, int] = dict(properties or {})
        self._version = version
        self._closed = False
        self._read_lock = asyncio.Lock()
        self._write_lock = asyncio.Lock()
        self._change_seq = 0
        self._durable_seq = 0
        self._write_task: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ views
    @property
    def mark_delete_position(self) -> Position:
        return self._state.mark_delete

    @property
    def read_position(self) -> Position:
        return self._state.read_position

    @property
    def backlog(self) -> int:
        return self._state.backlog(self._ml.layout)

    @property
    def properties(self) -> dict[str, int]:
        """The properties stored with the mark-delete (Pulsar's cursor properties), a copy."""
        return dict(self._properties)

    @property
    def individually_deleted(self) -> list[tuple[Position, Position]]:
        return list(self._state.individually_deleted.ranges())

    def is_acknowledged(self, pos: Position) -> bool:
        return self._state.is_acknowledged(pos)

    def unacknowledged(self, positions: Iterable[Position]) -> list[Position]:
        """Those of ``positions`` that exist and are not acknowledged, in their order."""
        return self._state.unacknowledged(positions, self._ml.layout)

    def batch_unacked(self, pos: Position) -> int | None:
        """The unacked-index mask of a partly acknowledged batch entry (bit i = index i), else
        None (the entry is unacked whole, or acknowledged)."""
        return self._state.batch_unacked(pos)

    @property
    def batch_masks(self) -> Mapping[Position, int]:
        """Every partly acknowledged batch entry's unacked-index mask (:meth:`batch_unacked`
        for a whole dispatch step: a read-only view, empty when there is none)."""
        return self._state.batch_deleted

    def has_more_entries(self) -> bool:
        return self._state.has_more(self._ml.layout)

    # ------------------------------------------------------------------ reads
    async def read_entries(self, max_entries: int) -> list[Entry]:
        """Up to ``max_entries`` unacknowledged entries from the read position; [] at the end."""
        self._check_open()
        async with self._read_lock:
            positions = self._state.next_read(self._ml.layout, max_entries)
            if not positions:
                return []
            entries = await self._ml.read_positions(positions)
            if entries:
                self._state.advance_read(entries[-1].position, self._ml.layout)
                self._ml.cursor_moved()
            return entries

    def read_cached(self, max_entries: int) -> list[Entry] | None:
        """:meth:`read_entries` without awaiting, when it would not have to: no read of this
        cursor in flight and every entry in the managed ledger's cache (the dispatcher of a
        consumer that keeps up). None: nothing was read, use :meth:`read_entries`."""
        self._check_open()
        if self._read_lock.locked():
            return None
        positions = self._state.next_read(self._ml.layout, max_entries)
        if not positions:
            return []
        entries = self._ml.read_cached(positions)
        if entries is None:
            return None
        self._state.advance_read(entries[-1].position, self._ml.layout)
        self._ml.cursor_moved()
        return entries

    async def read_entries_or_wait(self, max_entries: int, timeout_s: float) -> list[Entry]:
        """Like :meth:`read_entries`, but wait up to ``timeout_s`` for new entries if none."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        while True:
            new_entries = self._ml.new_entries_signal()
            got = await self.read_entries(max_entries)
            if got:
                return got
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                return []
            try:
                async with asyncio.timeout(remaining):
                    await new_entries.wait()
            except TimeoutError:
                return []
            self._check_open()

    # ------------------------------------------------------------------ acks and moves
    async def mark_delete(self, pos: Position, properties: Mapping[str, int] | None = None) -> None:
        """Cumulative ack of everything up to ``pos``; returns once durable.

        With ``properties`` they replace the cursor's properties in the same write (Pulsar's
        ``markDelete(position, properties)``), even when ``pos`` does not move the mark-delete.
        """
        self._check_open()
        changed = self._state.mark_deleted(pos, self._ml.layout)
        if properties is not None and dict(properties) != self._properties:
            self._properties = dict(properties)
            changed = True
        if changed:
            await self._persist()
            self._ml.cursor_moved(acked=True)

    async def delete(self, positions: Iterable[Position]) -> None:
        """Individual acks; returns once durable."""
        self._check_open()
        if self._state.deleted(positions, self._ml.layout):
            await self._persist()
            self._ml.cursor_moved(acked=True)

    async def delete_batch_indexes(self, unacked: Mapping[Position, int]) -> None:
        """Batch-index acks: entry -> the indexes still unacked (bit i = index i; none left
        acknowledges the entry). Persisted with the individual acks; returns once durable."""
        self._check_open()
        changed = [self._state.batch_acked(p, m, self._ml.layout) for p, m in unacked.items()]
        if any(changed):
            await self._persist()
            self._ml.cursor_moved(acked=True)

    async def seek(self, pos: Position) -> None:
        """Move the read position (not persisted; clamped above the mark-delete)."""
        self._check_open()
        self._state.seek(pos, self._ml.layout)

    async def reset(self, pos: Position) -> None:
        """Make ``pos`` the next entry to read, everything before it acknowledged; durable."""
        self._check_open()
        self._state.reset(pos, self._ml.layout)
        await self._persist()
        self._ml.cursor_moved(acked=True)

    # ------------------------------------------------------------------ persistence
    def info_bytes(self) -> bytes:
        return encode_cursor_info(
            cursor_info_of(
                self._state.mark_delete,
                self._state.individually_deleted,
                self._properties,
                last_active_ms=int(time.time() * 1000),
                batch_masks=self._state.batch_deleted,
            )
        )

    async def _persist(self) -> None:
        if not self.durable:
            return
        self._change_seq += 1
        target = self._change_seq
        async with self._write_lock:
            if self._write_task is not None and not self._write_task.done():
                # A write started by a caller that was cancelled: let it finish first.
                await asyncio.wait([self._write_task])
            if self._durable_seq >= target:
                return  # a write that started after our change already covered it
            self._check_open()
            self._write_task = asyncio.create_task(self._write(self._change_seq, self.info_bytes()))
            await asyncio.shield(self._write_task)

    async def _write(self, seq: int, data: bytes) -> None:
        key = keys.cursor(self._ml.name, self.name)
        try:
            if self._version is None:
                self._version = await self._ml.store.create(key, data)
            else:
                self._version = await self._ml.store.put(key, data, expected_version=self._version)
        except BadVersion as exc:
            log.warning("cursor_fenced", managed_ledger=self._ml.name, cursor=self.name)
            self._ml.fence(f"cursor {self.name!r} changed by another owner")
            raise ManagedLedgerFenced(self._ml.name, str(exc)) from exc
        self._durable_seq = max(self._durable_seq, seq)

    async def flush(self) -> None:
        """Wait for any write in flight (on close)."""
        if self._write_task is not None and not self._write_task.done():
            await asyncio.wait([self._write_task])

    def close(self) -> None:
        """Stop using the cursor. A reader's (non-durable) cursor also stops holding back the
        managed ledger's entry cache."""
        self._closed = True
        if not self.durable:
            self._ml.forget_non_durable_cursor(self)

    def _check_open(self) -> None:
        if self._closed:
            raise CursorClosed(self._ml.name, self.name)
        self._ml.check_usable()
