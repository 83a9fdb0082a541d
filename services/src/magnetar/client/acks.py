"""The consumer's acknowledgement tracker: individual, cumulative and batch-index acks, grouped.

Sans-I/O: the consumer feeds it acks and asks it for the ACK requests to send
(:meth:`AckTracker.flush`); it never writes to a connection and never reads a clock.

Batches. A batch entry holds ``batch_size`` messages; the tracker keeps, per registered batch
entry, the bits of the indexes not yet acknowledged (``java.util.BitSet`` layout, bit set =
unacked, as the broker and the C++ client use). Acknowledging one index clears its bit:

* once no bit remains, the whole entry is acknowledged (an ACK without ack_set);
* before that, with ``batch_index_ack`` on, the entry is acknowledged *with* the remaining ack
  set so the broker skips those indexes on redelivery; with it off nothing is sent yet.

Cumulative acks never move backwards. A cumulative ack of index i of a batch that still has
unacked indexes after i sends, with ``batch_index_ack`` on, the entry with bits 0..i cleared;
with it off it sends the previous entry (ledger, entry - 1), as the C++ client does.

Grouping. Acks collect until :meth:`flush`; the consumer flushes every ``group_time_s``
(0 = after every ack, :attr:`AckTracker.flush_now`) and whenever ``max_group_size`` distinct
entries wait. Individual acks of one entry merge (the newest ack set wins, a whole-entry ack
beats any ack set). A redelivered batch re-registers: its state is the broker's ack set ANDed
with what this tracker already knows. A batch index of an untracked batch is ignored (its batch
was fully acknowledged already).

Concurrency: single-threaded; owned by one consumer on its event loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeAlias

from magnetar.client.message import entry_id_of
from magnetar.protocol.message_id import MessageId, ack_set_from_bits, ack_set_to_bits
from magnetar.wire import pulsar_api_pb2 as pb

AckType: TypeAlias = pb.CommandAck.AckType.ValueType
INDIVIDUAL: AckType = pb.CommandAck.Individual
CUMULATIVE: AckType = pb.CommandAck.Cumulative

Entry = tuple[int, int]
_MASK64 = (1 << 64) - 1


@dataclass(frozen=True)
class AckRequest:
    """One ACK command's content: the type and (entry id, ack set) pairs (empty set = whole)."""

    ack_type: AckType
    ids: tuple[tuple[MessageId, tuple[int, ...]], ...]

    def to_command(self, consumer_id: int) -> pb.BaseCommand:
        """The ACK command (what ``commands.ack`` builds from ``MessageId.to_proto`` ids),
        filled in place: one request carries up to ``max_group_size`` ids, and building each
        id apart and copying it in cost more per id (docs/benchmarks.md, "Per-message
        costs")."""
        command = pb.BaseCommand(type=pb.BaseCommand.ACK)
        body = command.ack
        body.consumer_id = consumer_id
        body.ack_type = self.ack_type
        add = body.message_id.add
        for mid, ack_set in self.ids:
            # MessageIds hold signed int64s: & _MASK64 is to_unsigned64 without its range check
            data = add(ledger_id=mid.ledger_id & _MASK64, entry_id=mid.entry_id & _MASK64)
            if mid.partition >= 0:
                data.partition = mid.partition
            if mid.batch_index >= 0:
                data.batch_index = mid.batch_index
            if mid.batch_size > 0:
                data.batch_size = mid.batch_size
            if ack_set:
                data.ack_set.extend(ack_set)
        return command


@dataclass
class _Batch:
    size: int
    unacked: int  # bits; bit i set = index i unacknowledged


@dataclass
class AckTracker:
    batch_index_ack: bool = False
    group_time_s: float = 0.1
    max_group_size: int = 1000
    _batches: dict[Entry, _Batch] = field(default_factory=dict)
    _individual: dict[Entry, tuple[MessageId, tuple[int, ...]]] = field(default_factory=dict)
    _cumulative: tuple[MessageId, tuple[int, ...]] | None = None
    # the furthest cumulative position handed out: (entry, partial) where partial sorts first
    _cumulative_mark: tuple[Entry, int] | None = None

    # ------------------------------------------------------------------ batches
    def register_batch(self, entry: MessageId, batch_size: int, ack_set: list[int]) -> None:
        """A batch entry arrived; ``ack_set`` is the broker's (empty = every index unacked)."""
        full = (1 << batch_size) - 1
        bits = full & ack_set_to_bits(ack_set) if ack_set else full
        known = self._batches.get(entry.entry)
        if known is not None and known.size == batch_size:
            bits &= known.unacked  # acks of ours the broker has not seen yet still count
        if bits:
            self._batches[entry.entry] = _Batch(batch_size, bits)

    def batch_unacked(self, entry: MessageId) -> list[int] | None:
        """The unacked ack set of a tracked batch entry, or None if it is not tracked."""
        batch = self._batches.get(entry.entry)
        return None if batch is None else ack_set_from_bits(batch.unacked)

    @property
    def tracked_batches(self) -> int:
        return len(self._batches)

    # ------------------------------------------------------------------ acks
    def individual(self, mid: MessageId) -> bool:
        """Acknowledge one message (a batch index, or a whole entry).

        Returns True when ``max_group_size`` entries wait (the caller flushes now). Runs once
        per acknowledged message: the entry key is built once, no property on the way.
        """
        entry = (mid.ledger_id, mid.entry_id)
        if self._cumulative_mark is not None and self._covered_by_cumulative(entry):
            return False
        index = mid.batch_index
        batch = self._batches.get(entry)
        if batch is None:
            if index >= 0:
                return False  # that batch is already fully acknowledged (or never delivered)
            self._individual[entry] = (entry_id_of(mid), ())
        elif index < 0 or index >= batch.size:
            del self._batches[entry]
            self._individual[entry] = (entry_id_of(mid), ())
        else:
            batch.unacked &= ~(1 << index)
            if not batch.unacked:
                del self._batches[entry]
                self._individual[entry] = (entry_id_of(mid), ())
            elif self.batch_index_ack:
                previous = self._individual.get(entry)
                if previous is None or previous[1]:
                    self._individual[entry] = (
                        entry_id_of(mid),
                        tuple(ack_set_from_bits(batch.unacked)),
                    )
        return len(self._individual) >= self.max_group_size

    def cumulative(self, mid: MessageId) -> None:
        """Acknowledge every message up to and including ``mid``."""
        batch = self._batches.get(mid.entry)
        later = 0
        if batch is not None and 0 <= mid.batch_index < batch.size:
            later = batch.unacked & ~((1 << (mid.batch_index + 1)) - 1)
        if later:
            assert batch is not None
            batch.unacked = later
            if self.batch_index_ack:
                self._set_cumulative(
                    mid.entry, 0, (entry_id_of(mid), tuple(ack_set_from_bits(later)))
                )
            elif mid.entry_id > 0:
                prev = MessageId(mid.ledger_id, mid.entry_id - 1, partition=mid.partition)
                self._set_cumulative(prev.entry, 1, (prev, ()))
            self._forget_through(mid.entry, inclusive=False)
        else:
            self._set_cumulative(mid.entry, 1, (entry_id_of(mid), ()))
            self._forget_through(mid.entry, inclusive=True)

    def _set_cumulative(
        self, entry: Entry, whole: int, request: tuple[MessageId, tuple[int, ...]]
    ) -> None:
        mark = (entry, whole)
        if self._cumulative_mark is not None and mark <= self._cumulative_mark:
            return
        self._cumulative_mark = mark
        self._cumulative = request

    def _covered_by_cumulative(self, entry: Entry) -> bool:
        mark = self._cumulative_mark
        return mark is not None and (entry < mark[0] or (entry == mark[0] and mark[1] == 1))

    def _forget_through(self, entry: Entry, *, inclusive: bool) -> None:
        def gone(e: Entry) -> bool:
            return e < entry or (inclusive and e == entry)

        for e in [e for e in self._batches if gone(e)]:
            del self._batches[e]
        for e in [e for e in self._individual if gone(e)]:
            del self._individual[e]

    # ------------------------------------------------------------------ flushing
    @property
    def pending(self) -> int:
        """Acks waiting to be sent (entries)."""
        return len(self._individual) + (1 if self._cumulative is not None else 0)

    @property
    def flush_now(self) -> bool:
        """True when the waiting acks should go out without waiting for the group timer."""
        waiting = len(self._individual)
        if waiting and waiting >= self.max_group_size:
            return True
        return self.group_time_s <= 0 and (waiting > 0 or self._cumulative is not None)

    def flush(self) -> list[AckRequest]:
        """The ACK requests to send now (cumulative first); clears what was waiting."""
        out: list[AckRequest] = []
        if self._cumulative is not None:
            out.append(AckRequest(CUMULATIVE, (self._cumulative,)))
            self._cumulative = None
        if self._individual:
            out.append(AckRequest(INDIVIDUAL, tuple(self._individual.values())))
            self._individual = {}
        return out

    def reset_position(self) -> None:
        """Forget the cumulative mark and batch state (after a seek moves the subscription)."""
        self._cumulative_mark = None
        self._cumulative = None
        self._individual = {}
        self._batches.clear()
