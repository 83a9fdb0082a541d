"""Producer deduplication by sequence id (Pulsar's MessageDeduplication).

With deduplication enabled on a topic (the namespace's ``deduplicationEnabled``, else the
broker's ``brokerDeduplicationEnabled``), the topic remembers per producer name the highest
sequence id it has *pushed* (sent to the managed ledger) and *persisted* (durably added). A
SEND whose ``sequence_id`` is at or below the producer's last pushed id is a duplicate:

* at or below the last persisted id: it is not stored again and is answered with a
  SEND_RECEIPT carrying message id (-1, -1), as Pulsar does;
* above it (the original is still in flight): the answer waits for the original's outcome —
  a (-1, -1) receipt if it was persisted, SEND_ERROR(PersistenceError) otherwise (Pulsar answers
  the error at once; waiting spares the client a reconnect). The client resends after an error.

PRODUCER_SUCCESS carries the producer's last persisted id, so a reconnecting producer resumes.

Durability (Pulsar's design): the persisted map is snapshotted into the properties of a durable
cursor named ``pulsar.dedup``, its mark-delete set to the snapshot's position, every
``entries_interval`` persisted entries and when the topic closes. On load (or when enabled on a
live topic) the map is read back from the cursor's properties and the entries after its
mark-delete are replayed (their MessageMetadata name the producer and sequence ids), so a crash
loses nothing and the replay is bounded by the snapshot interval. The snapshot position is the
highest one below which *every* add has been recorded (adds get tickets in dispatch order; see
:class:`SequenceTracker`), so entries completing out of order are never skipped by a replay.
Disabling deletes the cursor (it would otherwise hold back trimming) and forgets the map.

Chunked messages (the official client's ``chunking_enabled``): every chunk of one message carries
the message's sequence id, so a chunk is identified by (sequence id, chunk id). The chunks before
the last are tracked apart (``chunks_pushed`` / ``chunks_persisted``: the highest chunk of the
producer's unfinished message); a resent chunk at or below them is a duplicate; the last chunk
completes the message and goes through the sequence-id maps like any SEND. So a producer that
reconnects mid-message and resends it stores each chunk once, and a whole message resent after
it completed is dropped. The unfinished chunk state is snapshotted with the map (under keys that
start with ``\x00``, which names never do).

Bounds: at most ``max_producers`` names are kept (producers disconnected the longest are
forgotten first) and names inactive for ``producer_inactivity_timeout_s`` are purged.

:class:`SequenceTracker` is the sans-I/O core; :class:`MessageDeduplication` is the topic's shell
around it and the cursor. Concurrency: everything on the broker's loop. Enabling/disabling is
serialised by a lock; the shell owns its snapshot task and waits for it on close.
"""

from __future__ import annotations

import asyncio
import enum
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from magnetar.broker.entry import entry_metadata
from magnetar.cancellation import cancel_and_wait
from magnetar.errors import MagnetarError
from magnetar.managed_ledger import InitialPosition, ManagedLedger, Position
from magnetar.managed_ledger.cursor import ManagedCursor
from magnetar.telemetry import get_logger
from magnetar.wire import pulsar_api_pb2 as pb

log = get_logger(__name__)

CURSOR_NAME = "pulsar.dedup"
# Snapshot property prefixes for the unfinished chunked message of a producer.
_CHUNK_SEQUENCE = "\x00chunk-sequence:"
_CHUNK_ID = "\x00chunk-id:"

Chunk = tuple[int, int]
"""(chunk_id, num_chunks_from_msg) of one SEND of a chunked message."""
_REPLAY_BATCH = 500
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class DeduplicationConfig:
    """Broker settings (Pulsar's broker.conf names in the comments)."""

    enabled: bool = False  # brokerDeduplicationEnabled
    entries_interval: int = 1000  # brokerDeduplicationEntriesInterval
    max_producers: int = 10_000  # brokerDeduplicationMaxNumberOfProducers
    producer_inactivity_timeout_s: float = 6 * 3600.0  # ...ProducerInactivityTimeoutMinutes


class DupStatus(enum.Enum):
    NOT_DUP = "not_dup"
    DUP = "dup"
    UNKNOWN = "unknown"  # at or below the last pushed id, above the last persisted one


def highest_of(sequence_id: int, highest_sequence_id: int | None) -> int:
    """The highest sequence id a SEND covers (a batch names its last one)."""
    return sequence_id if highest_sequence_id is None else max(sequence_id, highest_sequence_id)


def chunk_of(metadata: pb.MessageMetadata) -> Chunk | None:
    """The chunk a SEND or entry carries, None for a whole message."""
    total = metadata.num_chunks_from_msg
    return (metadata.chunk_id, total) if total > 1 else None


def _partial(chunk: Chunk | None) -> bool:
    """A chunk before the last one of its message."""
    return chunk is not None and chunk[0] < chunk[1] - 1


class SequenceTracker:
    """The pushed/persisted maps of one topic, the snapshot bookkeeping and the bounds. Pure."""

    def __init__(
        self, max_producers: int = 10_000, persisted: Mapping[str, int] | None = None
    ) -> None:
        self.max_producers = max_producers
        stored = dict(persisted or {})
        self.chunks_persisted: dict[str, tuple[int, int]] = {
            key[len(_CHUNK_SEQUENCE) :]: (
                value,
                stored.get(_CHUNK_ID + key[len(_CHUNK_SEQUENCE) :], -1),
            )
            for key, value in stored.items()
            if key.startswith(_CHUNK_SEQUENCE)
        }
        self.chunks_pushed: dict[str, tuple[int, int]] = dict(self.chunks_persisted)
        self.persisted: dict[str, int] = {
            k: v for k, v in stored.items() if not k.startswith("\x00")
        }
        self.pushed: dict[str, int] = dict(self.persisted)
        self.connected: set[str] = set()
        self.inactive_since: dict[str, float] = {}
        self.entries_since_snapshot = 0
        self.safe_position: Position | None = None  # every add up to here is recorded
        self.snapshot_position: Position | None = None
        self._next_ticket = 0
        self._low_ticket = 0
        self._done: dict[int, Position | None] = {}

    # ------------------------------------------------------------------ sends
    def check(
        self,
        name: str,
        sequence_id: int,
        highest_sequence_id: int | None,
        chunk: Chunk | None = None,
    ) -> DupStatus:
        """Classify a SEND; a NOT_DUP one is counted as pushed (call :meth:`dispatched`)."""
        last_pushed = self.pushed.get(name)
        if last_pushed is not None and sequence_id <= last_pushed:
            return DupStatus.DUP if self.is_persisted(name, sequence_id) else DupStatus.UNKNOWN
        if chunk is not None:
            seen = self.chunks_pushed.get(name)
            if seen is not None and seen[0] == sequence_id and chunk[0] <= seen[1]:
                persisted = self.is_persisted(name, sequence_id, chunk)
                return DupStatus.DUP if persisted else DupStatus.UNKNOWN
            if _partial(chunk):
                self.chunks_pushed[name] = (sequence_id, chunk[0])
                return DupStatus.NOT_DUP
        self.pushed[name] = highest_of(sequence_id, highest_sequence_id)
        return DupStatus.NOT_DUP

    def dispatched(self) -> int:
        """A ticket for an add about to be dispatched (tickets follow dispatch order)."""
        ticket = self._next_ticket
        self._next_ticket += 1
        return ticket

    def is_persisted(self, name: str, sequence_id: int, chunk: Chunk | None = None) -> bool:
        last = self.persisted.get(name)
        if last is not None and sequence_id <= last:
            return True
        done = self.chunks_persisted.get(name) if chunk is not None else None
        return (
            done is not None
            and done[0] == sequence_id
            and chunk is not None
            and chunk[0] <= done[1]
        )

    def last_sequence_id(self, name: str) -> int:
        return self.persisted.get(name, -1)

    def recorded(
        self,
        ticket: int,
        name: str,
        sequence_id: int,
        highest_sequence_id: int | None,
        position: Position | None,
        chunk: Chunk | None = None,
    ) -> None:
        """The add of ``ticket`` finished: persisted at ``position``, or failed (None)."""
        if position is None:
            # Later sends of this producer may resend this id: only what persisted counts.
            if _partial(chunk):
                self._fall_back(self.chunks_pushed, self.chunks_persisted, name)
            else:
                self._fall_back(self.pushed, self.persisted, name)
        else:
            self._persist(name, highest_of(sequence_id, highest_sequence_id), sequence_id, chunk)
            self.entries_since_snapshot += 1
        self._done[ticket] = position
        while self._low_ticket in self._done:
            done = self._done.pop(self._low_ticket)
            if done is not None and (self.safe_position is None or done > self.safe_position):
                self.safe_position = done
            self._low_ticket += 1

    def replayed(
        self,
        name: str,
        sequence_id: int,
        highest_sequence_id: int | None,
        pos: Position,
        chunk: Chunk | None = None,
    ) -> None:
        """An entry found after the snapshot on recovery."""
        self._persist(name, highest_of(sequence_id, highest_sequence_id), sequence_id, chunk)
        if _partial(chunk):
            self.chunks_pushed[name] = self.chunks_persisted[name]
        else:
            self.pushed[name] = max(self.pushed.get(name, -1), self.persisted[name])
        self.safe_position = pos if self.safe_position is None else max(self.safe_position, pos)

    def _persist(self, name: str, highest: int, sequence_id: int, chunk: Chunk | None) -> None:
        if name not in self.persisted and len(self.persisted) >= self.max_producers:
            self._evict_one()
        if _partial(chunk):
            assert chunk is not None
            self.chunks_persisted[name] = max(
                self.chunks_persisted.get(name, (-1, -1)), (sequence_id, chunk[0])
            )
            return
        self.persisted[name] = max(self.persisted.get(name, -1), highest)
        self.chunks_persisted.pop(name, None)  # the message is complete
        self.chunks_pushed.pop(name, None)

    @staticmethod
    def _fall_back(pushed: dict[str, T], persisted: dict[str, T], name: str) -> None:
        """What was pushed and not persisted will be resent: pushed falls back to persisted."""
        if name in persisted:
            pushed[name] = persisted[name]
        else:
            pushed.pop(name, None)

    def _evict_one(self) -> None:
        idle = sorted(self.inactive_since.items(), key=lambda kv: kv[1])
        victim = (
            idle[0][0]
            if idle
            else next((n for n in self.persisted if n not in self.connected), None)
        )
        if victim is not None:
            self.forget(victim)

    def forget(self, name: str) -> None:
        self.persisted.pop(name, None)
        self.pushed.pop(name, None)
        self.chunks_persisted.pop(name, None)
        self.chunks_pushed.pop(name, None)
        self.inactive_since.pop(name, None)

    # ------------------------------------------------------------------ producers
    def producer_added(self, name: str) -> None:
        self.connected.add(name)
        self.inactive_since.pop(name, None)

    def producer_removed(self, name: str, now: float) -> None:
        """A reconnecting producer resends what was not acknowledged: pushed falls back."""
        self.connected.discard(name)
        self._fall_back(self.chunks_pushed, self.chunks_persisted, name)
        if name in self.persisted:
            self.pushed[name] = self.persisted[name]
            self.inactive_since[name] = now
        else:
            self.pushed.pop(name, None)

    def purge_inactive(self, now: float, timeout_s: float) -> list[str]:
        gone = [n for n, since in self.inactive_since.items() if now - since >= timeout_s]
        for name in gone:
            self.forget(name)
        return gone

    # ------------------------------------------------------------------ snapshots
    def snapshot_due(self, interval: int) -> bool:
        return (
            self.entries_since_snapshot >= interval
            and self.safe_position is not None
            and (self.snapshot_position is None or self.safe_position > self.snapshot_position)
        )

    def snapshot(self) -> tuple[Position | None, dict[str, int]]:
        """The position and map to store; resets the entry counter."""
        self.entries_since_snapshot = 0
        stored = dict(self.persisted)
        for name, (sequence_id, chunk_id) in self.chunks_persisted.items():
            stored[_CHUNK_SEQUENCE + name] = sequence_id
            stored[_CHUNK_ID + name] = chunk_id
        return self.safe_position, stored

    def snapshot_taken(self, position: Position) -> None:
        if self.snapshot_position is None or position > self.snapshot_position:
            self.snapshot_position = position


class Status(enum.Enum):
    DISABLED = "Disabled"
    RECOVERING = "Recovering"
    ENABLED = "Enabled"


@dataclass(eq=False)
class Verdict:
    """The outcome of :meth:`MessageDeduplication.check` for one SEND."""

    status: DupStatus
    tracker: SequenceTracker | None = None
    ticket: int | None = None


NOT_TRACKED = Verdict(DupStatus.NOT_DUP)


@dataclass(eq=False)
class MessageDeduplication:
    """One persistent topic's deduplication: status, tracker and snapshot cursor."""

    topic: str
    ml: ManagedLedger
    config: DeduplicationConfig = field(default_factory=DeduplicationConfig)
    status: Status = Status.DISABLED
    tracker: SequenceTracker | None = None
    _cursor: ManagedCursor | None = None
    _ready: asyncio.Event = field(default_factory=asyncio.Event)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _snapshot_task: asyncio.Task[None] | None = None

    def __post_init__(self) -> None:
        self._ready.set()

    @property
    def enabled(self) -> bool:
        return self.status is Status.ENABLED

    @property
    def status_name(self) -> str:
        """Admin stats' ``deduplicationStatus``: Enabled, Disabled or Recovering."""
        return self.status.value

    async def wait_ready(self) -> None:
        """Return at once unless the map is being recovered."""
        if not self._ready.is_set():
            await self._ready.wait()

    # ------------------------------------------------------------------ status
    async def set_enabled(self, enabled: bool) -> None:
        """Enable (recover the map) or disable (delete the cursor); idempotent."""
        async with self._lock:
            if enabled and self.status is Status.DISABLED:
                await self._enable()
            elif not enabled and self.status is Status.ENABLED:
                await self._disable()

    async def _enable(self) -> None:
        self.status = Status.RECOVERING
        self._ready.clear()
        try:
            cursor = await self.ml.open_cursor(CURSOR_NAME, InitialPosition.LATEST)
            tracker = SequenceTracker(self.config.max_producers, cursor.properties)
            tracker.snapshot_position = cursor.mark_delete_position
            replayed = await self._replay(tracker, cursor.mark_delete_position)
            self._cursor, self.tracker = cursor, tracker
            self.status = Status.ENABLED
            if replayed:
                await self._take_snapshot()
        except BaseException:
            self.status = Status.DISABLED
            self._cursor = self.tracker = None
            raise
        finally:
            self._ready.set()
        log.info(
            "deduplication_enabled",
            topic=self.topic,
            producers=len(tracker.persisted),
            replayed=replayed,
        )

    async def _replay(self, tracker: SequenceTracker, after: Position) -> int:
        count = 0
        start = after.after()
        while True:
            entries = await self.ml.read_entries(start, _REPLAY_BATCH)
            for entry in entries:
                md = entry_metadata(entry.data)
                if md.producer_name:
                    highest = md.highest_sequence_id if md.HasField("highest_sequence_id") else None
                    tracker.replayed(
                        md.producer_name, md.sequence_id, highest, entry.position, chunk_of(md)
                    )
            count += len(entries)
            if len(entries) < _REPLAY_BATCH:
                return count
            start = entries[-1].position.after()

    async def _disable(self) -> None:
        await cancel_and_wait(self._snapshot_task)
        self._snapshot_task = None
        self.status = Status.DISABLED
        self._cursor = self.tracker = None
        if CURSOR_NAME in self.ml.cursors:
            await self.ml.delete_cursor(CURSOR_NAME)
        log.info("deduplication_disabled", topic=self.topic)

    # ------------------------------------------------------------------ sends
    def check(
        self,
        name: str,
        sequence_id: int,
        highest_sequence_id: int | None,
        chunk: Chunk | None = None,
    ) -> Verdict:
        """Classify a SEND (call in frame order, right before dispatching its add)."""
        tracker = self.tracker
        if self.status is not Status.ENABLED or tracker is None:
            return NOT_TRACKED
        status = tracker.check(name, sequence_id, highest_sequence_id, chunk)
        if status is not DupStatus.NOT_DUP:
            return Verdict(status, tracker)
        return Verdict(status, tracker, tracker.dispatched())

    def recorded(
        self,
        verdict: Verdict,
        name: str,
        sequence_id: int,
        highest_sequence_id: int | None,
        position: Position | None,
        chunk: Chunk | None = None,
    ) -> None:
        """The add of a NOT_DUP verdict finished (``position`` None: it failed)."""
        tracker, ticket = verdict.tracker, verdict.ticket
        if tracker is None or ticket is None:
            return
        tracker.recorded(ticket, name, sequence_id, highest_sequence_id, position, chunk)
        if tracker is self.tracker and tracker.snapshot_due(self.config.entries_interval):
            self._start_snapshot()

    def last_sequence_id(self, name: str) -> int:
        return -1 if self.tracker is None else self.tracker.last_sequence_id(name)

    def producer_added(self, name: str) -> None:
        if self.tracker is not None:
            self.tracker.producer_added(name)

    def producer_removed(self, name: str) -> None:
        if self.tracker is not None:
            self.tracker.producer_removed(name, time.monotonic())

    # ------------------------------------------------------------------ snapshots
    def _start_snapshot(self) -> None:
        if self._snapshot_task is None or self._snapshot_task.done():
            self._snapshot_task = asyncio.create_task(
                self._snapshot_quietly(), name=f"dedup-snapshot-{self.topic}"
            )

    async def _snapshot_quietly(self) -> None:
        try:
            await self._take_snapshot()
        except MagnetarError as exc:
            log.warning("deduplication_snapshot_failed", topic=self.topic, error=repr(exc))

    async def _take_snapshot(self) -> None:
        tracker, cursor = self.tracker, self._cursor
        if tracker is None or cursor is None:
            return
        tracker.purge_inactive(time.monotonic(), self.config.producer_inactivity_timeout_s)
        position, persisted = tracker.snapshot()
        if position is None:
            return
        position = max(position, cursor.mark_delete_position)
        await cursor.mark_delete(position, persisted)
        tracker.snapshot_taken(position)
        log.debug("deduplication_snapshot", topic=self.topic, position=str(position))

    async def close(self) -> None:
        """Take a last snapshot (so the next load replays nothing) and stop."""
        async with self._lock:
            await cancel_and_wait(self._snapshot_task)
            self._snapshot_task = None
            if self.status is Status.ENABLED:
                try:
                    await self._take_snapshot()
                except MagnetarError as exc:
                    log.warning("deduplication_snapshot_failed", topic=self.topic, error=repr(exc))
