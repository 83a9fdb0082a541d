"""The replicator's pure core: what to replicate, and the window of entries in flight.

:func:`should_replicate` is Pulsar's filter (PersistentReplicator): an entry that carries
``replicated_from`` was replicated into this cluster and is never sent on (no loops in a full
mesh); an entry whose producer set ``replicate_to`` goes only to the clusters listed there.
:func:`replicated_metadata` is the copy that travels: the origin's metadata whole (producer
name, sequence id, publish and event time, keys, properties, batch count, compression) plus
``replicated_from`` = the local cluster.

:class:`ReplicationWindow` holds the entries read from the replicator cursor and not yet
acknowledged by the remote, in log order, bounded in count and bytes. Entries are settled out
of band (a receipt, or a skip) and the mark-delete only ever moves over a settled prefix, so
the cursor never passes an entry the remote has not stored. After a failure the shell drops the
window and rewinds the cursor to the mark-delete; what is resent the remote deduplicates.

Pure: no I/O, no loop. One replicator owns one window at a time.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass

from magnetar.managed_ledger import Position
from magnetar.wire import pulsar_api_pb2 as pb


def should_replicate(metadata: pb.MessageMetadata, remote: str) -> bool:
    """Whether an entry with ``metadata`` goes to ``remote``."""
    if metadata.HasField("replicated_from"):
        return False
    if metadata.replicate_to:
        return remote in metadata.replicate_to
    return True


def replicated_metadata(metadata: pb.MessageMetadata, local: str) -> pb.MessageMetadata:
    """The metadata the remote stores: the origin's, marked as replicated from ``local``."""
    copy = pb.MessageMetadata()
    copy.CopyFrom(metadata)
    copy.replicated_from = local
    return copy


@dataclass(slots=True)
class _Slot:
    position: Position
    size: int
    publish_time_ms: int
    settled: bool = False


class ReplicationWindow:
    """Entries in flight to one remote cluster, in log order."""

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        if max_entries < 1 or max_bytes < 1:
            raise ValueError("the replication window needs room for one entry")
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._slots: collections.OrderedDict[Position, _Slot] = collections.OrderedDict()
        self._bytes = 0
        self._mark_delete: Position | None = None

    def __len__(self) -> int:
        return len(self._slots)

    @property
    def in_flight_bytes(self) -> int:
        return self._bytes

    @property
    def room(self) -> int:
        """How many more entries may be read now (0 when full by count or bytes)."""
        if self._bytes >= self.max_bytes:
            return 0
        return self.max_entries - len(self._slots)

    @property
    def oldest_publish_time_ms(self) -> int | None:
        """The publish time of the oldest entry not yet settled (None: nothing in flight)."""
        for slot in self._slots.values():
            return slot.publish_time_ms
        return None

    def sent(self, position: Position, size: int, publish_time_ms: int) -> None:
        """An entry went to the remote; it waits for its receipt."""
        if position in self._slots:
            raise ValueError(f"entry {position} is already in flight")
        self._slots[position] = _Slot(position, size, publish_time_ms)
        self._bytes += size

    def skipped(self, position: Position, publish_time_ms: int = 0) -> None:
        """An entry that does not go to this remote: settled at once, in its place."""
        self._slots[position] = _Slot(position, 0, publish_time_ms, settled=True)
        self._advance()

    def acknowledged(self, position: Position) -> None:
        """The remote stored the entry at ``position`` (unknown positions are ignored)."""
        slot = self._slots.get(position)
        if slot is None or slot.settled:
            return
        slot.settled = True
        self._bytes -= slot.size
        self._advance()

    def _advance(self) -> None:
        slots = self._slots
        while slots:
            position, head = next(iter(slots.items()))
            if not head.settled:
                return
            slots.popitem(last=False)
            self._mark_delete = position

    def take_mark_delete(self) -> Position | None:
        """The position the cursor may mark-delete up to since the last call (None: no move)."""
        target, self._mark_delete = self._mark_delete, None
        return target
