"""A managed ledger (Pulsar's ManagedLedgerImpl): a topic's log as a chain of ledgers.

This module orchestrates; the parts it drives live beside it. Persisted state: the chain
(ManagedLedgerInfo) is read and written by :mod:`.meta_store`, every change by compare-and-set
on the version this owner last wrote; a conflict means another owner took over and the
managed ledger becomes *fenced* (every call raises :class:`ManagedLedgerFenced`). Cursors
persist themselves (see :mod:`.cursor`).

Open (:meth:`ManagedLedger.open`): load the info; the last ledger may have been left OPEN by a
crash, so it is opened with recovery (which fences and closes it) and its final entry count is
recorded (an empty one is dropped); then a new ledger is created and added to the info by CAS
*before* any entry is written to it; then the cursors are loaded.

Adds: :meth:`add_entry` (and its ``_nowait`` and ``_callback`` forms) hands the add to
:mod:`.add_dispatch`, which queues it in call order behind a FIFO gate of ``max_pending_adds``
(:mod:`.add_queue`) and dispatches queued adds in order to the current ledger, so positions
strictly increase in call order; each durable add comes back through :meth:`entry_confirmed`
(layout, entry cache, new-entries signal). When the dispatch asks for it
(:meth:`start_rollover`: the rollover policy says so, or an append failed), dispatching stops, a
rollover task waits for the current ledger's in-flight adds, closes the ledger, creates the
next, records both in the info by CAS, and dispatching resumes: nothing is lost or reordered.
``LedgerFenced`` on an add fences the managed ledger.

Reads go to the entry cache, else to the ledgers (read handles opened without recovery and kept
per ledger). Trimming (after acks and rollovers, one task at a time) deletes the ledgers wholly
behind every durable cursor and outside retention: from the info by CAS first, then from the
ledger layer.

Concurrency: everything runs on one event loop; callers are the broker's topics, cursors and
subscriptions (from their tasks and from the writer's completion callbacks). Info writes are
serialised by the meta store's lock. The managed ledger owns its rollover and trim tasks and
waits for them on close; the add dispatch owns the tasks of adds waiting for room in the
writer, which a rollover or close waits for (:meth:`.add_dispatch.CurrentLedger.settled`).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import itertools
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence

from magnetar.errors import MagnetarError
from magnetar.ids import EntryId, LedgerId
from magnetar.ledger.errors import LedgerFenced, NoSuchEntry, NoSuchLedger
from magnetar.managed_ledger.add_dispatch import AddDispatch, CurrentLedger
from magnetar.managed_ledger.add_queue import AddCallback, RunAddCallback
from magnetar.managed_ledger.codec import decode_cursor_info
from magnetar.managed_ledger.config import InitialPosition, ManagedLedgerConfig
from magnetar.managed_ledger.cursor import ManagedCursor
from magnetar.managed_ledger.cursor_state import CursorState
from magnetar.managed_ledger.entry_cache import Entry, EntryCache
from magnetar.managed_ledger.errors import (
    CursorNotFound,
    ManagedLedgerClosed,
    ManagedLedgerFenced,
)
from magnetar.managed_ledger.layout import LedgerLayout
from magnetar.managed_ledger.ledger_access import LedgerAccess, LedgerReader, LedgerWriter
from magnetar.managed_ledger.meta_store import MetaStore
from magnetar.managed_ledger.position import Position, position_of_pair
from magnetar.managed_ledger.trimming import LedgerInfo, ledgers_to_trim
from magnetar.metadata import keys
from magnetar.metadata.errors import KeyExists, NotFound
from magnetar.metadata.store import MetadataStore, Versioned
from magnetar.telemetry import get_logger

log = get_logger(__name__)


_TRIM_DRAIN_S = 10.0


class State(enum.Enum):
    OPEN = "open"
    CLOSED = "closed"
    FENCED = "fenced"


def _now_ms() -> int:
    return int(time.time() * 1000)


class ManagedLedger:
    """See the module docstring. Build with :meth:`open` (the factory does)."""

    def __init__(
        self,
        name: str,
        config: ManagedLedgerConfig,
        store: MetadataStore,
        bk: LedgerAccess,
        cache: EntryCache,
        on_close: Callable[[ManagedLedger], None] | None = None,
    ) -> None:
        self.name = name
        self._config = config
        self.store = store
        self._bk = bk
        self._cache = cache
        self._on_close = on_close
        self._state = State.OPEN
        self._fence_reason = ""
        self._meta = MetaStore(store, name)
        self.layout = LedgerLayout()
        self._dispatch = AddDispatch(self, config.max_pending_adds, config.rollover)
        self._rollover_task: asyncio.Task[None] | None = None
        self._trim_task: asyncio.Task[None] | None = None
        self._trim_again = False
        self._readers: dict[LedgerId, LedgerReader] = {}
        self._cursors: dict[str, ManagedCursor] = {}
        self._non_durable: set[ManagedCursor] = set()
        self._new_entries = asyncio.Event()
        self._new_entries_shared = False  # handed out since it was last replaced
        self._entry_listeners: list[Callable[[], None]] = []
        self._last_confirmed_lac_floor = -1
        self._last_confirmed = Position(LedgerId(0), EntryId(-1))

    # ================================================================== open
    @classmethod
    async def open(
        cls,
        name: str,
        config: ManagedLedgerConfig,
        store: MetadataStore,
        bk: LedgerAccess,
        cache: EntryCache,
        on_close: Callable[[ManagedLedger], None] | None = None,
    ) -> ManagedLedger:
        ml = cls(name, config, store, bk, cache, on_close)
        try:
            await ml._initialize()
        except BaseException:
            await ml._release()
            raise
        return ml

    async def _initialize(self) -> None:
        ledgers = await self._meta.load()
        ledgers, dropped = await self._recover_last(ledgers)
        writer = await self._create_writer()
        ledgers.append(LedgerInfo(writer.ledger_id))
        await self._write_info(ledgers)
        self._dispatch.current = CurrentLedger(writer)
        self.layout = LedgerLayout((li.ledger_id, li.entries) for li in ledgers)
        self._last_confirmed = self.layout.last_position()
        for lid in dropped:
            await self._delete_ledger_quietly(lid)
        await self._load_cursors()
        log.info(
            "managed_ledger_opened",
            managed_ledger=self.name,
            ledgers=len(ledgers),
            current_ledger=writer.ledger_id,
            cursors=len(self._cursors),
        )

    async def _recover_last(
        self, ledgers: list[LedgerInfo]
    ) -> tuple[list[LedgerInfo], list[LedgerId]]:
        """Recover the last ledger if it was not closed by us (a crash): fence, close, count."""
        if not ledgers or ledgers[-1].timestamp_ms != 0:
            return ledgers, []
        last = ledgers[-1]
        try:
            reader = await self._bk.open_ledger(last.ledger_id, recovery=True)
        except NoSuchLedger:
            log.warning(
                "recovered_ledger_missing", managed_ledger=self.name, ledger_id=last.ledger_id
            )
            return ledgers[:-1], []
        meta = reader.metadata
        entries = meta.last_entry_id + 1
        log.info(
            "ledger_recovered", managed_ledger=self.name, ledger_id=last.ledger_id, entries=entries
        )
        if entries <= 0:
            await reader.close()
            return ledgers[:-1], [last.ledger_id]
        self._readers[last.ledger_id] = reader
        ledgers[-1] = LedgerInfo(last.ledger_id, entries, meta.length, _now_ms())
        return ledgers, []

    async def _load_cursors(self) -> None:
        prefix = keys.cursors_prefix(self.name)
        for key, versioned in await self.store.list(prefix):
            cursor_name = keys.cursor_name_of(self.name, key)
            self._cursors[cursor_name] = self._stored_cursor(cursor_name, key, versioned)

    def _stored_cursor(self, name: str, key: str, versioned: Versioned) -> ManagedCursor:
        """The durable cursor ``name`` as persisted at ``key``, its read position normalised."""
        info = decode_cursor_info(key, versioned.value)
        state = CursorState(
            info.mark_delete,
            individually_deleted=info.range_set(),
            batch_deleted=info.batch_masks(),
        )
        if state.read_position <= self.layout.end_position():
            state.seek(state.read_position, self.layout)
        return ManagedCursor(
            self,
            name,
            state,
            durable=True,
            version=versioned.version,
            properties=info.properties,
        )

    async def _create_writer(self) -> LedgerWriter:
        return await self._bk.create_ledger(
            self.config.ensemble_size,
            self.config.write_quorum,
            self.config.ack_quorum,
            {"managed-ledger": self.name.encode()},
        )

    # ================================================================== info
    async def _write_info(
        self,
        ledgers: Sequence[LedgerInfo],
        *,
        properties: Mapping[str, str] | None = None,
        terminated_position: Position | None = None,
    ) -> None:
        """CAS the chain (see :meth:`MetaStore.write`); a conflict fences us. Callers hold the
        info lock (or are opening)."""
        try:
            await self._meta.write(
                ledgers, properties=properties, terminated_position=terminated_position
            )
        except ManagedLedgerFenced:
            self.fence("managed ledger info changed by another owner")
            raise

    # ================================================================== state
    @property
    def state(self) -> State:
        return self._state

    @property
    def ledgers(self) -> list[LedgerInfo]:
        """The chain as last persisted (the current ledger's counts are 0 until closed)."""
        return list(self._meta.ledgers)

    @property
    def current_ledger_id(self) -> LedgerId | None:
        cur = self._dispatch.current
        return None if cur is None else cur.ledger_id

    @property
    def current_ledger_bytes(self) -> int:
        """Bytes confirmed in the ledger being written (its size in :attr:`ledgers` is 0 until
        it is closed); 0 during a rollover."""
        cur = self._dispatch.current
        return 0 if cur is None else cur.confirmed_bytes

    def estimated_backlog_size(self, after: Position) -> int:
        """Bytes of the entries after ``after`` (Pulsar's ``backlogSize``): every later ledger
        whole, the ledger ``after`` is in by its share of entries still ahead."""
        sizes = {li.ledger_id: li.size for li in self._meta.ledgers}
        current = self.current_ledger_id
        if current is not None:
            sizes[current] = self.current_ledger_bytes
        total = 0
        for lid, count in self.layout.items():
            if lid < after.ledger_id or count == 0:
                continue
            size = sizes.get(lid, 0)
            if lid == after.ledger_id:
                ahead = max(count - (after.entry_id + 1), 0)
                total += size * ahead // count
            else:
                total += size
        return total

    @property
    def last_confirmed_position(self) -> Position:
        """The last entry added (it stays so after its ledger is trimmed)."""
        return max(self._last_confirmed, self.layout.last_position())

    @property
    def number_of_entries(self) -> int:
        return self.layout.total_entries

    @property
    def cursors(self) -> dict[str, ManagedCursor]:
        return dict(self._cursors)

    @property
    def ledger_access(self) -> LedgerAccess:
        """The ledger client this managed ledger writes through (the compactor writes its
        compacted ledgers with it, under the same persistence settings)."""
        return self._bk

    @property
    def config(self) -> ManagedLedgerConfig:
        return self._config

    @config.setter
    def config(self, config: ManagedLedgerConfig) -> None:
        """New settings (e.g. retention from a namespace policy) apply from the next add."""
        self._config = config
        self._dispatch.policy = config.rollover
        self._dispatch.adds.max_pending = config.max_pending_adds

    def check_usable(self) -> None:
        if self._state is State.FENCED:
            raise ManagedLedgerFenced(self.name, self._fence_reason)
        if self._state is State.CLOSED:
            raise ManagedLedgerClosed(self.name)

    # ------------------------------------------------------------------ properties, terminate
    @property
    def properties(self) -> dict[str, str]:
        """The owner's key/value state, persisted in the info (Pulsar's ML properties)."""
        return dict(self._meta.properties)

    async def set_property(self, key: str, value: str) -> None:
        """Persist ``key`` = ``value`` in the info (CAS; a conflict fences us)."""
        self.check_usable()
        async with self._meta.lock:
            properties = {**self._meta.properties, key: value}
            await self._write_info(self._meta.ledgers, properties=properties)

    @property
    def terminated_position(self) -> Position | None:
        """The last entry of a terminated managed ledger (no add may follow it), else None."""
        return self._meta.terminated_position

    async def terminate(self) -> Position:
        """Record the last confirmed entry as the end of the log (persisted; idempotent).

        The caller (the topic) refuses new adds first and lets in-flight ones finish, so the
        position recorded is the last entry there will ever be."""
        self.check_usable()
        async with self._meta.lock:
            terminated = self._meta.terminated_position
            if terminated is None:
                terminated = self.last_confirmed_position
                await self._write_info(self._meta.ledgers, terminated_position=terminated)
            log.info("managed_ledger_terminated", managed_ledger=self.name)
            return terminated

    def fence(self, reason: str) -> None:
        if self._state is not State.OPEN:
            return
        log.warning("managed_ledger_fenced", managed_ledger=self.name, reason=reason)
        self._state = State.FENCED
        self._fence_reason = reason
        self._dispatch.fail_all(ManagedLedgerFenced(self.name, reason))
        self._signal_new_entries()

    def new_entries_signal(self) -> asyncio.Event:
        self._new_entries_shared = True
        return self._new_entries

    def add_new_entries_listener(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener()`` (on the loop, synchronously) whenever the new-entries signal
        fires: entries confirmed, fenced, closed. Cheaper than waiting on the signal in a task.
        Returns the function that removes the listener."""
        self._entry_listeners.append(listener)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._entry_listeners.remove(listener)

        return remove

    def _signal_new_entries(self) -> None:
        # A fresh event only when the current one was handed out (nobody else can wait on it).
        if self._new_entries_shared:
            event, self._new_entries = self._new_entries, asyncio.Event()
            self._new_entries_shared = False
            event.set()
        listeners = self._entry_listeners
        if len(listeners) == 1:
            listeners[0]()
        else:
            for listener in list(listeners):
                listener()

    # ================================================================== adds
    async def add_entry(self, data: bytes) -> Position:
        """Append ``data``; return its position once durable. Positions follow call order."""
        future = self.add_entry_nowait(data)
        if future is None:
            await self._dispatch.wait_for_slot()
            future = self._dispatch.enqueue(data)
        return await future

    def add_entry_nowait(self, data: bytes) -> asyncio.Future[Position] | None:
        """Queue ``data`` at once if a pending-add slot is free (no waiter ahead): the future
        resolves to its position once durable. None: no room (nothing queued; use
        :meth:`add_entry`). Positions follow call order across both methods."""
        if not self._dispatch.take_slot():
            return None
        return self._dispatch.enqueue(data)

    def add_entry_callback(
        self, data: bytes, callback: AddCallback, info: object = None, crc: int = -1
    ) -> bool:
        """:meth:`add_entry_nowait` without a future: ``callback(position, None)`` once
        durable, or ``callback(None, error)``; called from the writer's completion (never
        before this returns). False: no free slot, nothing queued. ``info`` and ``crc``: as
        :meth:`add_reserved_run` has them."""
        if not self._dispatch.take_slot():
            return False
        self._dispatch.enqueue_callback(data, callback, info, crc)
        return True

    def reserve_adds(self, count: int) -> int:
        """Pending-add slots for up to ``count`` adds taken at once (none if an add waits for
        one); hand the adds over with :meth:`add_reserved`, before anything else can run.
        Raises like :meth:`add_entry_callback`."""
        return self._dispatch.take_slots(count)

    def add_reserved(self, adds: Sequence[tuple[bytes, AddCallback]], unused: int = 0) -> None:
        """:meth:`add_entry_callback` for a run of adds on slots :meth:`reserve_adds` took:
        queued in order and dispatched in one pass; ``unused`` of the slots taken are not
        needed (a run's duplicates and refused entries) and are given back."""
        self._dispatch.enqueue_callbacks(adds, unused)

    def add_reserved_run(
        self,
        datas: Sequence[bytes],
        callback: RunAddCallback,
        unused: int = 0,
        infos: Sequence[object] | None = None,
        crcs: Sequence[int] | None = None,
    ) -> None:
        """:meth:`add_reserved` for a run of adds reporting to one ``callback``: ``(index,
        positions, None)`` for each stretch of durable adds from ``datas[index]`` on, in order
        (the whole run in one call when it is confirmed together), ``(index, None, error)``
        for a failed add. Called from the writer's completion, never before this returns.
        ``infos`` (parallel to ``datas``): what the writer already knows of each entry, kept
        with it in the cache as a reader's :meth:`remember_entry_infos` would keep it.
        ``crcs`` (parallel to ``datas``): each one's ``crc32c`` where the caller checked it
        (-1 where not): its entry digest is combined from it instead of read from the data."""
        self._dispatch.enqueue_run(datas, callback, unused, infos, crcs)

    # ================================================================== add dispatch's owner
    @property
    def dispatching(self) -> bool:
        """Queued adds may go to the current ledger (asked by :mod:`.add_dispatch`)."""
        return self._state is State.OPEN and self._rollover_task is None

    def start_rollover(self) -> None:
        """Called by :mod:`.add_dispatch` when the current ledger is done with (or missing)."""
        self._rollover_task = asyncio.create_task(self._rollover())

    def entry_confirmed(
        self,
        ledger_id: LedgerId,
        entry_id: EntryId,
        data: bytes,
        lac_floor: int,
        info: object = None,
    ) -> Position:
        """An add is durable (reported by :mod:`.add_dispatch`): count it, cache it, signal."""
        pos = Position(ledger_id, entry_id)
        if self.layout.entries_of(ledger_id) < entry_id + 1:
            self.layout.set_entries(ledger_id, entry_id + 1)
        if pos > self._last_confirmed:
            self._last_confirmed = pos
        # Bookies know at least the LAC each confirmed entry carried: entries above the highest
        # such LAC may not be readable from bookies yet, so the cache keeps them.
        pinned = self._cache.pinned_from
        if lac_floor > self._last_confirmed_lac_floor or pinned is None or pinned[0] != ledger_id:
            self._last_confirmed_lac_floor = max(self._last_confirmed_lac_floor, lac_floor)
            pinned = Position(ledger_id, EntryId(self._last_confirmed_lac_floor + 1))
            self._cache.pinned_from = pinned
        if self._cursors or self._non_durable:
            self._cache.insert(Entry(pos, data, info))
        else:
            # No cursor will read it: only the pinned tail is kept, held aside (as Pulsar
            # caches an added entry only when the managed ledger has active cursors).
            self._cache.hold_run((pos,), (data,), (info,))
        self._signal_new_entries()
        return pos

    def entries_confirmed(
        self,
        ledger_id: LedgerId,
        first: EntryId,
        datas: list[bytes],
        lac_floor: int,
        infos: Sequence[object] | None = None,
    ) -> list[Position]:
        """A run of adds is durable, entries ``first``.. in order (reported by
        :mod:`.add_dispatch`): :meth:`entry_confirmed` for each, with the layout, the pin of
        the cache and the readers' signal done once for the run."""
        end = first + len(datas)
        # Built by the C-level tuple constructor, not the NamedTuples' Python-level __new__.
        positions = list(map(position_of_pair, zip(itertools.repeat(ledger_id), range(first, end))))
        if self.layout.entries_of(ledger_id) < end:
            self.layout.set_entries(ledger_id, end)
        last = positions[-1]
        if last > self._last_confirmed:
            self._last_confirmed = last
        # As entry_confirmed: entries above the highest LAC they carried stay cached.
        pinned = self._cache.pinned_from
        if lac_floor > self._last_confirmed_lac_floor or pinned is None or pinned[0] != ledger_id:
            self._last_confirmed_lac_floor = max(self._last_confirmed_lac_floor, lac_floor)
            pinned = Position(ledger_id, EntryId(self._last_confirmed_lac_floor + 1))
            self._cache.pinned_from = pinned
        if self._cursors or self._non_durable:
            self._cache.insert_run(positions, datas, infos)
        else:  # as entry_confirmed: the run held aside, not cached entry by entry
            self._cache.hold_run(positions, datas, infos)
        self._signal_new_entries()
        return positions

    # ================================================================== rollover
    async def _rollover(self) -> None:
        started = time.monotonic()
        try:
            old = self._dispatch.current
            if old is not None:
                await self._close_current(old)
            try:
                writer = await self._create_writer()
            except MagnetarError as exc:
                log.warning("ledger_create_failed", managed_ledger=self.name, error=str(exc))
                self._dispatch.fail_all(exc)
                return
            async with self._meta.lock:
                await self._write_info([*self._meta.ledgers, LedgerInfo(writer.ledger_id)])
            self._dispatch.current = CurrentLedger(writer)
            self._last_confirmed_lac_floor = -1
            self.layout.append(writer.ledger_id)
            log.info(
                "ledger_rolled_over",
                managed_ledger=self.name,
                ledger_id=writer.ledger_id,
                duration_ms=round((time.monotonic() - started) * 1000, 1),
                queued_adds=len(self._dispatch.adds.ops),
            )
        except MagnetarError as exc:
            # Fenced, or the store failed: fail what waits; the next add tries again (unless
            # fenced). A closed ledger's final counts stay in the meta store's chain for the
            # next write.
            log.warning("rollover_failed", managed_ledger=self.name, error=str(exc))
            self._dispatch.fail_all(exc)
        finally:
            self._rollover_task = None
            if self._state is State.OPEN:
                self._dispatch.pump()
                self._schedule_trim()

    async def _close_current(self, cur: CurrentLedger) -> None:
        """Wait for in-flight adds, close the writer, record its final counts in the info."""
        await cur.settled()
        self._dispatch.current = None
        try:
            await cur.writer.close()
        except LedgerFenced:
            self.fence(f"ledger {cur.ledger_id} fenced")
            raise ManagedLedgerFenced(self.name, f"ledger {cur.ledger_id} fenced") from None
        except MagnetarError as exc:
            # The ledger stays OPEN in its metadata; our count of confirmed entries is what
            # readers of this managed ledger will see.
            log.warning("ledger_close_failed", managed_ledger=self.name, error=str(exc))
        entries = self.layout.entries_of(cur.ledger_id)
        closed = LedgerInfo(cur.ledger_id, entries, cur.confirmed_bytes, _now_ms())
        self._cache.pinned_from = None
        async with self._meta.lock:
            # Recorded in memory first: if this write fails, the next info write carries it.
            self._meta.record_closed(closed)
            await self._write_info(self._meta.ledgers)
        reader = self._readers.pop(cur.ledger_id, None)
        if reader is not None:
            await _close_quietly(reader.close)

    # ================================================================== reads
    async def read_entries(self, start: Position, max_entries: int) -> list[Entry]:
        """Up to ``max_entries`` entries from ``start`` on, across ledgers."""
        self.check_usable()
        positions: list[Position] = []
        pos = self.layout.first_at_or_after(start)
        while pos is not None and len(positions) < max_entries:
            positions.append(pos)
            pos = self.layout.next_position(pos)
        return await self.read_positions(positions)

    async def read_positions(self, positions: Sequence[Position]) -> list[Entry]:
        """The entries at ``positions`` (ascending), cache first; stops early at the first entry
        that is not readable yet (the unconfirmed tail of an open ledger)."""
        out: list[Entry] = []
        i = 0
        while i < len(positions):
            cached = self._cache.get_run(positions, i)
            if cached:
                out.extend(cached)
                i += len(cached)
                continue
            j = i + 1
            while (
                j < len(positions)
                and positions[j].ledger_id == positions[i].ledger_id
                and positions[j].entry_id == positions[j - 1].entry_id + 1
                and positions[j] not in self._cache
            ):
                j += 1
            got = await self._read_from_ledger(positions[i], positions[j - 1])
            out.extend(got)
            if len(got) < j - i:
                break
            i = j
        return out

    def read_cached(self, positions: Sequence[Position]) -> list[Entry] | None:
        """The entries at ``positions`` if the cache holds every one (no await), else None."""
        entries = self._cache.get_run(positions)
        return entries if len(entries) == len(positions) else None

    def remember_entry_infos(self, infos: Sequence[tuple[Position, object]]) -> None:
        """A reader's facts about entries it read (opaque here), kept with them while they stay
        cached and handed back as :attr:`Entry.info` (the broker's parsed metadata)."""
        self._cache.remember(infos)

    async def _read_from_ledger(self, first: Position, last: Position) -> list[Entry]:
        lid = first.ledger_id
        reader = self._readers.get(lid)
        if reader is None:
            reader = await self._bk.open_ledger(lid, recovery=False)
            existing = self._readers.setdefault(lid, reader)
            if existing is not reader:
                await _close_quietly(reader.close)
                reader = existing
        try:
            got = await reader.read(first.entry_id, last.entry_id)
        except NoSuchEntry:
            if lid == self.current_ledger_id:
                return []  # not visible to readers yet; the caller retries later
            raise
        return [Entry(Position(lid, e.entry_id), e.payload) for e in got]

    # ================================================================== cursors
    async def open_cursor(
        self, name: str, initial_position: InitialPosition = InitialPosition.LATEST
    ) -> ManagedCursor:
        """The durable cursor ``name``, created at ``initial_position`` if new."""
        self.check_usable()
        existing = self._cursors.get(name)
        if existing is not None:
            return existing
        if initial_position is InitialPosition.EARLIEST:
            state = CursorState(self.layout.first_position())
        else:
            last = self.layout.last_position()
            state = CursorState(last, self.layout.end_position())
        cursor = ManagedCursor(self, name, state, durable=True)
        key = keys.cursor(self.name, name)
        try:
            cursor._version = await self.store.create(key, cursor.info_bytes())
        except KeyExists:
            found = await self.store.get(key)
            if found is None:
                raise ManagedLedgerFenced(self.name, f"cursor {name!r} vanished") from None
            cursor = self._stored_cursor(name, key, found)
        self._cursors.setdefault(name, cursor)
        log.info("cursor_opened", managed_ledger=self.name, cursor=name)
        return self._cursors[name]

    def new_non_durable_cursor(self, start: Position) -> ManagedCursor:
        """A reader's cursor at ``start`` (its first read returns ``start``); never persisted."""
        self.check_usable()
        state = CursorState(start.before())
        state.seek(start, self.layout)
        cursor = ManagedCursor(self, f"reader-{id(state):x}", state, durable=False)
        self._non_durable.add(cursor)
        return cursor

    def forget_non_durable_cursor(self, cursor: ManagedCursor) -> None:
        """Called by a closing reader cursor, so it no longer holds back the entry cache."""
        self._non_durable.discard(cursor)

    async def delete_cursor(self, name: str) -> None:
        self.check_usable()
        cursor = self._cursors.pop(name, None)
        if cursor is None:
            raise CursorNotFound(self.name, name)
        cursor.close()
        await cursor.flush()
        with contextlib.suppress(NotFound):
            await self.store.delete(keys.cursor(self.name, name))
        log.info("cursor_deleted", managed_ledger=self.name, cursor=name)
        self._schedule_trim()

    def cursor_moved(self, acked: bool = False) -> None:
        """A cursor read: evict what no active cursor will read from the cache. A cursor
        acked: trim, if a closed ledger could go (the current ledger never does). An ack
        does not evict: the next read does (this runs for every ACK frame and read step)."""
        if acked:
            if len(self._meta.ledgers) > 1:
                self._schedule_trim()
            return
        active = [*self._cursors.values(), *self._non_durable]
        if active:
            self._cache.evict_before(min(c.read_position for c in active))

    # ================================================================== trimming
    def _schedule_trim(self) -> None:
        if self._state is not State.OPEN:
            return
        if self._trim_task is not None and not self._trim_task.done():
            self._trim_again = True
            return
        self._trim_task = asyncio.create_task(self._trim_loop())

    async def _trim_loop(self) -> None:
        while True:
            self._trim_again = False
            try:
                await self.trim_ledgers()
            except ManagedLedgerFenced:
                return
            except MagnetarError as exc:
                log.warning("trim_failed", managed_ledger=self.name, error=str(exc))
                return
            if not self._trim_again or self._state is not State.OPEN:
                return

    async def trim_ledgers(self) -> list[LedgerId]:
        """Delete the ledgers behind every durable cursor and outside retention; return them."""
        self.check_usable()
        async with self._meta.lock:
            durable = [c.mark_delete_position for c in self._cursors.values()]
            slowest = min(durable) if durable else None
            chain = self._meta.ledgers
            doomed = ledgers_to_trim(chain, slowest, self.config.retention, _now_ms())
            if not doomed:
                return []
            gone = set(doomed)
            await self._write_info([li for li in chain if li.ledger_id not in gone])
            for lid in doomed:
                self.layout.remove(lid)
                self._cache.evict_ledger(lid)
        for lid in doomed:
            reader = self._readers.pop(lid, None)
            if reader is not None:
                await _close_quietly(reader.close)
            await self._delete_ledger_quietly(lid)
        log.info("ledgers_trimmed", managed_ledger=self.name, ledger_ids=doomed)
        return doomed

    async def _delete_ledger_quietly(self, lid: LedgerId) -> None:
        try:
            await self._bk.delete_ledger(lid)
        except NoSuchLedger:
            pass
        except MagnetarError as exc:
            log.warning(
                "ledger_delete_failed", managed_ledger=self.name, ledger_id=lid, error=str(exc)
            )

    # ================================================================== close / delete
    async def close(self) -> None:
        """Finish in-flight adds, close the current ledger (recording it), release everything."""
        if self._state is State.CLOSED:
            return
        was_open = self._state is State.OPEN
        if self._rollover_task is not None:
            await asyncio.wait([self._rollover_task])
        self._state = State.CLOSED
        self._dispatch.fail_all(ManagedLedgerClosed(self.name))
        cur = self._dispatch.current
        if was_open and cur is not None:
            try:
                await self._close_current(cur)
            except MagnetarError as exc:
                log.warning("close_ledger_failed", managed_ledger=self.name, error=str(exc))
        elif cur is not None:
            await cur.settled()
        for cursor in [*self._cursors.values(), *self._non_durable]:
            await cursor.flush()
            cursor.close()
        await self._release()
        log.info("managed_ledger_closed", managed_ledger=self.name)

    async def _release(self) -> None:
        self._state = State.CLOSED
        self._signal_new_entries()
        if self._trim_task is not None:
            # Let a trim finish its ledger deletions (the info no longer lists them: a cancelled
            # trim would leak them), but not forever.
            await asyncio.wait([self._trim_task], timeout=_TRIM_DRAIN_S)
            self._trim_task.cancel()
            await asyncio.wait([self._trim_task])
        for reader in self._readers.values():
            await _close_quietly(reader.close)
        self._readers.clear()
        self._cache.clear()
        if self._on_close is not None:
            self._on_close(self)
            self._on_close = None

    async def delete(self) -> None:
        """Close, then remove cursors and info from the store, then delete every ledger."""
        ledgers = [li.ledger_id for li in self._meta.ledgers]
        cursor_names = list(self._cursors)
        await self.close()
        for name in cursor_names:
            with contextlib.suppress(NotFound):
                await self.store.delete(keys.cursor(self.name, name))
        await self._meta.delete()
        for lid in ledgers:
            await self._delete_ledger_quietly(lid)
        log.info("managed_ledger_deleted", managed_ledger=self.name, ledgers=len(ledgers))


async def _close_quietly(close: Callable[[], Awaitable[None]]) -> None:
    try:
        await close()
    except MagnetarError as exc:
        log.debug("close_failed", error=str(exc))
