"""Pending acks of a subscription: every entry delivered to a consumer and not yet acked.

One :class:`PendingAcks` per subscription maps each delivered entry's position to a
:class:`PendingAck` (owner consumer, batch size, sticky-key slot, indexes still unacked), with
indexes by consumer and by slot. Rules (Pulsar's ``Consumer`` / ``PendingAcksMap``):

* A position is pending on at most one consumer. Acks resolve whichever consumer holds it (an
  ACK may arrive on another consumer of the same subscription, or late, or twice).
* Individual ACK without ack set → the entry is acked. With an ack set (batch-index ack, bit i
  set = index i still unacked, ``java.util.BitSet.toLongArray`` layout) → the stored unacked bits
  are ANDed with it; the entry is acked once no bit remains. An individual ACK for a position not
  pending is still reported as acked (the cursor must record it; duplicates are harmless), unless
  it carries a partial ack set (nothing to AND it with: ignored).
* Cumulative ACK (Exclusive/Failover only) → every pending entry at or before the position is
  acked; with an ack set, the entry at the position itself is only partly acked.
* A closing consumer's pending entries, and REDELIVER_UNACKNOWLEDGED (all of the consumer's, or
  the given ids it holds), leave this table and go to the redelivery queue (redelivery.py).
* :meth:`PendingAcks.holders_of_hash` feeds Key_Shared's draining guard.

Driving it::

    pending.add(consumer.key, pos, batch_size=n, sticky_hash=slot)       # after MESSAGE sent
    out = pending.ack_individual(pos, ack_set=ack_set_to_mask(mid.ack_set) if mid.ack_set else None)
    await cursor.delete(out.acked)
    for p in pending.remove_consumer(consumer.key): queue.add(p.position, p.sticky_hash)

Mutable; owned by the subscription's task; no awaits, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from magnetar.broker.dispatch.consumers import ConsumerKey
from magnetar.managed_ledger.position import Position

# NamedTuple's generated __new__ is a Python-level lambda: the per-entry lines below build
# their tuples with tuple.__new__ directly (about half the cost).
_new_tuple = tuple.__new__
_WORD = 64
_WORD_MASK = (1 << _WORD) - 1


def full_mask(batch_size: int) -> int:
    """The unacked-bits mask of a batch of ``batch_size`` messages none of which is acked."""
    return (1 << batch_size) - 1


def ack_set_to_mask(words: Sequence[int]) -> int:
    """Decode ``MessageIdData.ack_set`` (signed int64 words, little-endian) into a bit mask."""
    mask = 0
    for i, word in enumerate(words):
        mask |= (word & _WORD_MASK) << (i * _WORD)
    return mask


def mask_to_ack_set(mask: int) -> list[int]:
    """Encode a bit mask as ``ack_set`` words (signed int64, as the proto field carries them)."""
    words: list[int] = []
    while mask:
        word = mask & _WORD_MASK
        words.append(word - (1 << _WORD) if word >= 1 << (_WORD - 1) else word)
        mask >>= _WORD
    return words


class PendingAck(NamedTuple):
    """One delivered, unacked entry.

    A NamedTuple rather than a frozen dataclass: one is built for every dispatched entry, and a
    tuple is built faster (no ``object.__setattr__`` per field; docs/benchmarks.md,
    "Per-message costs"). Built by
    :meth:`PendingAcks.add` only, which always gives the unacked mask.
    """

    position: Position
    consumer: ConsumerKey
    batch_size: int
    sticky_hash: int | None
    unacked: int  # bit i set = index i unacked (all of them: ``full_mask(batch_size)``)

    @property
    def unacked_count(self) -> int:
        return self.unacked.bit_count()

    @property
    def partly_acked(self) -> bool:
        return self.unacked != full_mask(self.batch_size)


@dataclass(frozen=True, slots=True)
class AckOutcome:
    """What an ACK did: entries now fully acked, and batch entries now partly acked."""

    acked: tuple[Position, ...] = ()
    partial: tuple[PendingAck, ...] = ()
    released: tuple[PendingAck, ...] = ()  # the pending records the ACK removed


class PendingAcks:
    """Position → PendingAck for one subscription, indexed by consumer and by slot."""

    def __init__(self) -> None:
        self._by_position: dict[Position, PendingAck] = {}
        self._by_consumer: dict[ConsumerKey, set[Position]] = {}
        self._by_hash: dict[int, dict[ConsumerKey, int]] = {}

    def __len__(self) -> int:
        return len(self._by_position)

    def __contains__(self, position: object) -> bool:
        return position in self._by_position

    def get(self, position: Position) -> PendingAck | None:
        return self._by_position.get(position)

    def add(
        self,
        consumer: ConsumerKey,
        position: Position,
        batch_size: int = 1,
        sticky_hash: int | None = None,
        unacked: int | None = None,
    ) -> PendingAck:
        """Record a delivery; a position already pending moves to ``consumer``."""
        if batch_size < 1:
            raise ValueError(f"batch size must be >= 1, got {batch_size}")
        if position in self._by_position:
            self._drop(position)
        full = (1 << batch_size) - 1
        record = PendingAck(
            position, consumer, batch_size, sticky_hash, full if unacked is None else unacked & full
        )
        self._by_position[position] = record
        held = self._by_consumer.get(consumer)
        if held is None:
            held = self._by_consumer[consumer] = set()
        held.add(position)
        if sticky_hash is not None:
            holders = self._by_hash.setdefault(sticky_hash, {})
            holders[consumer] = holders.get(consumer, 0) + 1
        return record

    def add_run(
        self,
        consumer: ConsumerKey,
        positions: Sequence[Position],
        batch_sizes: Sequence[int],
        sticky_hashes: Sequence[int] | None = None,
        unacked: Sequence[int | None] | None = None,
    ) -> None:
        """:meth:`add` for the entries a dispatch step sent one consumer (parallel lists;
        ``sticky_hashes`` None: not Key_Shared, ``unacked`` None: every entry unacked whole),
        with the consumer's index looked up once."""
        by_position = self._by_position
        held = self._by_consumer.get(consumer)
        if held is None:
            held = self._by_consumer[consumer] = set()
        for i in range(len(positions)):
            position = positions[i]
            batch_size = batch_sizes[i]
            if batch_size < 1:
                raise ValueError(f"batch size must be >= 1, got {batch_size}")
            if position in by_position:
                self._drop(position)
                held = self._by_consumer.setdefault(consumer, held)
            full = (1 << batch_size) - 1
            mask = unacked[i] if unacked is not None else None
            sticky_hash = sticky_hashes[i] if sticky_hashes is not None else None
            unacked_mask = full if mask is None else mask & full
            by_position[position] = _new_tuple(
                PendingAck, (position, consumer, batch_size, sticky_hash, unacked_mask)
            )
            held.add(position)
            if sticky_hash is not None:
                holders = self._by_hash.setdefault(sticky_hash, {})
                holders[consumer] = holders.get(consumer, 0) + 1

    def ack_individual(self, position: Position, ack_set: int | None = None) -> AckOutcome:
        record = self._by_position.get(position)
        if record is None:
            if ack_set is None or ack_set == 0:
                return AckOutcome(acked=(position,))
            return AckOutcome()
        if ack_set is not None:
            remaining = record.unacked & ack_set
            if remaining:
                updated = record._replace(unacked=remaining)
                self._by_position[position] = updated
                return AckOutcome(partial=(updated,))
        self._drop(position)
        return AckOutcome(acked=(position,), released=(record,))

    def discard(self, position: Position) -> None:
        """Individual ACK of a whole entry (no ack set): like ``ack_individual(position)``,
        whose outcome is always ``acked=(position,)``, without building the outcome."""
        self._drop(position)

    def discard_run(self, positions: Sequence[Position]) -> None:
        """:meth:`discard` for every id of an ACK frame without ack sets."""
        # :meth:`_drop` inlined: one lookup of each position, the consumer's index looked up
        # once per run of entries it holds (the usual ACK: all of one consumer's).
        by_position, by_consumer = self._by_position, self._by_consumer
        owner: ConsumerKey | None = None
        held: set[Position] = set()
        for position in positions:
            record = by_position.pop(position, None)
            if record is None:
                continue
            consumer = record.consumer
            if consumer != owner:
                owner = consumer
                held = by_consumer[consumer]
            held.discard(position)
            if not held:  # (none of its entries can follow: each is in its index)
                del by_consumer[consumer]
            if record.sticky_hash is not None:
                self._release_hash(record.sticky_hash, consumer)

    def ack_cumulative(self, position: Position, ack_set: int | None = None) -> AckOutcome:
        covered = sorted(p for p in self._by_position if p <= position)
        acked: list[Position] = []
        released: list[PendingAck] = []
        partial: tuple[PendingAck, ...] = ()
        for p in covered:
            if p == position and ack_set is not None:
                outcome = self.ack_individual(p, ack_set)
                partial = outcome.partial
                acked.extend(outcome.acked)
                released.extend(outcome.released)
                continue
            released.append(self._by_position[p])
            self._drop(p)
            acked.append(p)
        return AckOutcome(tuple(acked), partial, tuple(released))

    def remove_consumer(self, consumer: ConsumerKey) -> list[PendingAck]:
        """Take all of a closing consumer's pending entries, in position order."""
        return self.redeliver(consumer, None)

    def redeliver(
        self, consumer: ConsumerKey, positions: Iterable[Position] | None = None
    ) -> list[PendingAck]:
        """Take the consumer's pending entries (all, or those of ``positions`` it holds)."""
        held = self._by_consumer.get(consumer, set())
        chosen = set(held) if positions is None else held.intersection(positions)
        taken = [self._by_position[p] for p in sorted(chosen)]
        for record in taken:
            self._drop(record.position)
        return taken

    def of(self, consumer: ConsumerKey) -> list[PendingAck]:
        return [self._by_position[p] for p in sorted(self._by_consumer.get(consumer, ()))]

    def unacked_messages(self, consumer: ConsumerKey) -> int:
        """Unacked messages (not entries) held by the consumer."""
        return sum(self._by_position[p].unacked_count for p in self._by_consumer.get(consumer, ()))

    def holders_of_hash(self, sticky_hash: int) -> frozenset[ConsumerKey]:
        """Consumers holding unacked entries of a Key_Shared slot."""
        return frozenset(self._by_hash.get(sticky_hash, ()))

    def oldest(self) -> Position | None:
        return min(self._by_position, default=None)

    def _drop(self, position: Position) -> None:
        record = self._by_position.pop(position, None)
        if record is None:
            return
        held = self._by_consumer[record.consumer]
        held.discard(position)
        if not held:
            del self._by_consumer[record.consumer]
        if record.sticky_hash is not None:
            self._release_hash(record.sticky_hash, record.consumer)

    def _release_hash(self, sticky_hash: int, consumer: ConsumerKey) -> None:
        """One entry of ``consumer`` under ``sticky_hash`` is no longer pending."""
        holders = self._by_hash[sticky_hash]
        holders[consumer] -= 1
        if not holders[consumer]:
            del holders[consumer]
        if not holders:
            del self._by_hash[sticky_hash]
