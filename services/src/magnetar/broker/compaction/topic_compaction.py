"""A topic's compaction: its status, its compacted view, its runs, and the compacted reads.

:class:`TopicCompaction` belongs to one persistent topic. :meth:`~TopicCompaction.trigger`
starts a run (:mod:`.compactor`) in a task of its own, unless one is running; the status is
Pulsar's LongRunningProcessStatus (``NOT_RUN`` until the first run since the topic loaded,
``RUNNING``, ``SUCCESS``, ``ERROR`` with ``lastError``). The compacted view is opened lazily from
the ``__compaction`` cursor's properties, so it survives restarts; a run replaces it and closes
the previous one.

:class:`CompactedReads` is one ``read_compacted`` subscription's way through the topic: the
compacted view up to its horizon (only the latest message of each key, with the ack set of the
batch messages that survive), then the topic's own entries after the horizon. It moves the
subscription's cursor as it goes, so positions, acks and stats stay the cursor's. A subscription
that has acknowledged and read nothing of what is stored starts at the compacted view's first
entry, even when the ledgers it came from were trimmed since; the reads keep their place in the
view from one consumer of the subscription to the next.

Concurrency: on the broker's loop. Runs are serialised by the one task; readers see either the
old view or the new one (both valid: each holds the latest value of every key up to its horizon).
"""

from __future__ import annotations

import asyncio
import enum
import time
from collections.abc import Sequence

from magnetar.broker.compaction.compacted_view import CompactedView
from magnetar.broker.compaction.compactor import (
    COMPACTION_CURSOR,
    LEDGER_PROPERTY,
    ORPHAN_PROPERTY,
    Compactor,
)
from magnetar.cancellation import cancel_and_wait
from magnetar.errors import MagnetarError
from magnetar.ids import EntryId, LedgerId
from magnetar.managed_ledger import Entry, InitialPosition, ManagedCursor, ManagedLedger, Position
from magnetar.managed_ledger.ledger_access import LedgerAccess
from magnetar.telemetry import get_logger

log = get_logger(__name__)

_BEFORE_EVERYTHING = Position(LedgerId(-1), EntryId(-1))


class CompactionStatus(enum.Enum):
    NOT_RUN = "NOT_RUN"
    RUNNING = "RUNNING"
    SUCCESS = "SUCCESS"
    ERROR = "ERROR"


class TopicCompaction:
    """See the module docstring."""

    def __init__(self, topic: str, ml: ManagedLedger) -> None:
        self.topic = topic
        self._ml = ml
        self._compactor = Compactor(ml)
        self.status = CompactionStatus.NOT_RUN
        self.last_error = ""
        self._view: CompactedView | None = None
        self._loaded = False
        self._load_lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self._succeeded_ms = self._failed_ms = self._duration_ms = 0

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def stats_json(self) -> dict[str, int]:
        """Pulsar's CompactionStats in topic stats (0s until a run since the topic loaded)."""
        return {
            "lastCompactionRemovedEventCount": self._compactor.last_removed,
            "lastCompactionSucceedTimestamp": self._succeeded_ms,
            "lastCompactionFailedTimestamp": self._failed_ms,
            "lastCompactionDurationTimeInMills": self._duration_ms,
        }

    def status_json(self) -> dict[str, str]:
        """Pulsar's LongRunningProcessStatus."""
        return {"status": self.status.value, "lastError": self.last_error}

    def compacted_ledger_json(self) -> dict[str, object]:
        """Pulsar's internal-stats ``compactedLedger`` (-1s before the first compaction;
        entries -1 until the view is opened)."""
        cursor = self._ml.cursors.get(COMPACTION_CURSOR)
        lid = -1 if cursor is None else cursor.properties.get(LEDGER_PROPERTY, -1)
        view = self._view
        entries = view.count if view is not None and view.ledger_id == lid else -1
        return {"ledgerId": lid, "entries": entries, "size": -1, "offloaded": False}

    def ledger_ids(self) -> list[LedgerId]:
        """The compacted ledgers the ``__compaction`` cursor names (the view, an orphan)."""
        cursor = self._ml.cursors.get(COMPACTION_CURSOR)
        if cursor is None:
            return []
        props = cursor.properties
        found = (props.get(LEDGER_PROPERTY), props.get(ORPHAN_PROPERTY))
        return [LedgerId(lid) for lid in found if lid is not None]

    def backlog_bytes(self) -> int:
        """Bytes after the horizon (Pulsar's compaction threshold compares this); the whole
        topic before the first run."""
        cursor = self._ml.cursors.get(COMPACTION_CURSOR)
        after = self._ml.layout.first_position() if cursor is None else cursor.mark_delete_position
        return self._ml.estimated_backlog_size(after)

    async def view(self) -> CompactedView | None:
        """The current compacted view (None if the topic was never compacted)."""
        if not self._loaded:
            async with self._load_lock:
                if not self._loaded:
                    cursor = self._ml.cursors.get(COMPACTION_CURSOR)
                    if cursor is not None:
                        self._view = await self._compactor.open_view(cursor)
                    self._loaded = True
        return self._view

    def trigger(self) -> bool:
        """Start a run; False if one is already running (or the topic is closing)."""
        if self.running or self._closed:
            return False
        self.status = CompactionStatus.RUNNING
        self._task = asyncio.create_task(self._run(), name=f"compaction-{self.topic}")
        return True

    async def _run(self) -> None:
        started = time.monotonic()
        try:
            cursor = await self._ml.open_cursor(COMPACTION_CURSOR, InitialPosition.EARLIEST)
            previous = await self.view()
            view = await self._compactor.run(cursor, previous)
            if view is not previous:
                self._view = view
                if previous is not None:
                    await previous.close()
                await self._compactor.delete_orphan(cursor)
        except Exception as exc:  # any failure is the run's status, never a stuck RUNNING
            self.status = CompactionStatus.ERROR
            self.last_error = str(exc)
            self._failed_ms = int(time.time() * 1000)
            log.warning("compaction_failed", topic=self.topic, error=repr(exc))
            return
        self.status = CompactionStatus.SUCCESS
        self.last_error = ""
        self._succeeded_ms = int(time.time() * 1000)
        self._duration_ms = int((time.monotonic() - started) * 1000)

    @property
    def current_view(self) -> CompactedView | None:
        """The view as loaded so far (no I/O)."""
        return self._view

    def reads(self, cursor: ManagedCursor) -> CompactedReads:
        return CompactedReads(self, self._ml, cursor)

    async def close(self) -> None:
        self._closed = True
        await cancel_and_wait(self._task)
        self._task = None
        if self._view is not None:
            await self._view.close()
            self._view = None


async def delete_compacted_ledgers(access: LedgerAccess, ledger_ids: list[LedgerId]) -> None:
    """Delete a deleted topic's compacted ledgers (:meth:`TopicCompaction.ledger_ids`, taken
    before its managed ledger went); one that is already gone is skipped."""
    for lid in ledger_ids:
        try:
            await access.delete_ledger(lid)
        except MagnetarError as exc:
            log.warning("compacted_ledger_delete_failed", ledger_id=lid, error=repr(exc))


class CompactedReads:
    """One read_compacted subscription's reads (see the module docstring)."""

    def __init__(
        self,
        compaction: TopicCompaction,
        ml: ManagedLedger,
        cursor: ManagedCursor,
    ) -> None:
        self._compaction = compaction
        self._ml = ml
        self._cursor = cursor
        self._next: Position | None = None  # in the view: the next position to read
        self._synced = cursor.read_position  # where we left the cursor

    async def read_entries(self, max_entries: int) -> tuple[list[Entry], dict[Position, int]]:
        """The next entries and, for batches some of whose messages were compacted out, the
        mask of the messages that survive (bit i = batch index i)."""
        cursor = self._cursor
        if cursor.read_position != self._synced:
            self._next = None  # the cursor was moved (seek, reset): start where it is now
        view = await self._compaction.view()
        start = self._next if self._next is not None else self._start()
        if view is None or start > view.horizon:
            return await cursor.read_entries(max_entries), {}
        first = await view.find(start)
        got = await view.entries(first, first + max_entries - 1)
        if not got:
            self._next = None
            await cursor.seek(view.horizon.after())
            self._synced = cursor.read_position
            return await cursor.read_entries(max_entries), {}
        self._next = got[-1].position.after()
        await cursor.seek(self._next)
        self._synced = cursor.read_position
        entries = [Entry(ce.position, ce.stored) for ce in got]
        return entries, {ce.position: ce.mask for ce in got if ce.mask is not None}

    def cursor_reset(self) -> None:
        """The subscription reset its cursor: start again from where the cursor is."""
        self._next = None
        self._synced = self._cursor.read_position

    def _start(self) -> Position:
        """Where a cursor that is not in the view yet starts in it: at the view's first entry
        when it has acknowledged and read nothing of what is stored (a new subscription or
        reader at the earliest message, a reset to it, a restart before any ack) — the view
        may hold messages from ledgers trimmed since; else at its read position."""
        cursor, layout = self._cursor, self._ml.layout
        first = layout.first_at_or_after(layout.first_position())
        if (
            first is not None
            and cursor.mark_delete_position == layout.first_position()
            and cursor.read_position <= first
        ):
            return _BEFORE_EVERYTHING
        return cursor.read_position

    def readable(self, pos: Position) -> bool:
        """Whether a redelivery of ``pos`` can be read (from the topic or the compacted view)."""
        view = self._compaction.current_view
        return self._ml.layout.contains(pos) or (view is not None and pos <= view.horizon)

    async def read_positions(self, positions: Sequence[Position]) -> list[Entry]:
        """Entries for redelivery: from the compacted view when it holds them, else the topic."""
        view = await self._compaction.view()
        out: list[Entry] = []
        for pos in positions:
            if view is not None and pos <= view.horizon:
                index = await view.find(pos)
                found = await view.entries(index, index)
                if found and found[0].position == pos:
                    out.append(Entry(pos, found[0].stored))
                    continue
            out.extend(await self._ml.read_positions([pos]))
        return out
