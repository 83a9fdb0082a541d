"""Message ids as Pulsar clients see them, and the batch-index ack set (a bitset of longs).

A message id names an entry (ledger_id, entry_id) and, inside a batch entry, one message
(batch_index). ledger_id and entry_id travel as uint64 but are signed int64 everywhere else:
``earliest`` is (-1, -1), which arrives as 2^64-1, and ``latest`` is (INT64_MAX, INT64_MAX).
:meth:`MessageId.from_proto` and :meth:`MessageId.to_proto` do the two's-complement conversion;
a MessageId always holds the signed values.

Ordering is the clients' order: (ledger_id, entry_id, batch_index), then partition. A whole
entry (batch_index -1) sorts before its first batch index. batch_size takes no part in equality
or ordering.

Ack sets use java.util.BitSet.toLongArray's layout, which the C++ client shares: bit i lives in
word i // 64 at position i % 64; words are signed int64; trailing all-zero words are dropped.
A set bit means "index i not yet acknowledged". An empty ack set therefore has two meanings
that callers must keep apart: on MESSAGE it means "deliver every index"; as the state of a batch
it means "all acknowledged".

Pure values and functions; safe from any task or thread.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from magnetar.protocol.errors import InvalidMessageId
from magnetar.wire import pulsar_api_pb2 as pb

INT64_MAX = (1 << 63) - 1
INT64_MIN = -(1 << 63)
_U64 = 1 << 64
_MASK64 = _U64 - 1


def to_signed64(value: int) -> int:
    """Read a uint64 wire value as the int64 every Pulsar implementation means."""
    value &= _MASK64
    return value - _U64 if value > INT64_MAX else value


def to_unsigned64(value: int) -> int:
    """Write an int64 into a uint64 wire field (two's complement)."""
    if not INT64_MIN <= value <= INT64_MAX:
        raise InvalidMessageId(f"{value} is outside the signed 64-bit range")
    return value & _MASK64


_new = object.__new__


@dataclass(frozen=True, order=True, slots=True)
class MessageId:
    """A message position: entry (ledger_id, entry_id) plus batch index and partition."""

    ledger_id: int
    entry_id: int
    batch_index: int = -1
    partition: int = -1
    batch_size: int = field(default=0, compare=False)

    def __post_init__(self) -> None:
        for name in ("ledger_id", "entry_id"):
            value = getattr(self, name)
            if not INT64_MIN <= value <= INT64_MAX:
                raise InvalidMessageId(f"{name}={value} is outside the signed 64-bit range")

    @property
    def entry(self) -> tuple[int, int]:
        """The (ledger_id, entry_id) position of the entry holding this message."""
        return (self.ledger_id, self.entry_id)

    @property
    def is_batch_index(self) -> bool:
        return self.batch_index >= 0

    def with_partition(self, partition: int) -> MessageId:
        return MessageId(
            self.ledger_id, self.entry_id, self.batch_index, partition, self.batch_size
        )

    @classmethod
    def from_proto(cls, data: pb.MessageIdData) -> MessageId:
        return unchecked_message_id(
            to_signed64(data.ledger_id),
            to_signed64(data.entry_id),
            data.batch_index,
            data.partition,
            data.batch_size,
        )

    def to_proto(self, *, ack_set: Sequence[int] = ()) -> pb.MessageIdData:
        """The wire form. partition and batch_index are written only when set (>= 0)."""
        data = pb.MessageIdData(
            ledger_id=to_unsigned64(self.ledger_id), entry_id=to_unsigned64(self.entry_id)
        )
        if self.partition >= 0:
            data.partition = self.partition
        if self.batch_index >= 0:
            data.batch_index = self.batch_index
        if self.batch_size > 0:
            data.batch_size = self.batch_size
        if ack_set:
            data.ack_set.extend(ack_set)
        return data


def unchecked_message_id(
    ledger_id: int, entry_id: int, batch_index: int, partition: int, batch_size: int
) -> MessageId:
    """A MessageId without ``__init__``'s range check, for ids that are in range by
    construction (converted from the wire, or taken from another id): clients build one per
    message sent or received, and skipping the check makes that cheaper
    (docs/benchmarks.md, "Per-message costs")."""
    mid = _new(MessageId)
    _set_ledger(mid, ledger_id)
    _set_entry(mid, entry_id)
    _set_batch_index(mid, batch_index)
    _set_partition(mid, partition)
    _set_batch_size(mid, batch_size)
    return mid


# The slots' own setters (past the frozen class's __setattr__, as object.__setattr__ goes, but
# without looking each name up): 312 against 446 ns an id (python -m
# tests.bench.per_message_costs, "unchecked_message_id", has the constructor's figure).
_Setter = Callable[[MessageId, int], None]
_set_ledger: _Setter = MessageId.__dict__["ledger_id"].__set__
_set_entry: _Setter = MessageId.__dict__["entry_id"].__set__
_set_batch_index: _Setter = MessageId.__dict__["batch_index"].__set__
_set_partition: _Setter = MessageId.__dict__["partition"].__set__
_set_batch_size: _Setter = MessageId.__dict__["batch_size"].__set__


EARLIEST = MessageId(-1, -1)
LATEST = MessageId(INT64_MAX, INT64_MAX)


# ------------------------------------------------------------------ ack sets


def ack_set_to_bits(ack_set: Iterable[int]) -> int:
    """The ack set as one non-negative Python int (bit i = index i unacked)."""
    bits = 0
    for word_index, word in enumerate(ack_set):
        bits |= (word & _MASK64) << (64 * word_index)
    return bits


def ack_set_from_bits(bits: int) -> list[int]:
    """Signed int64 words for ``bits``, trailing zero words dropped (BitSet.toLongArray)."""
    if bits < 0:
        raise ValueError("an ack set cannot be negative")
    words: list[int] = []
    while bits:
        words.append(to_signed64(bits & _MASK64))
        bits >>= 64
    return words


def ack_set_all_unacked(batch_size: int) -> list[int]:
    """The ack set of a batch of ``batch_size`` messages of which none is acknowledged."""
    if batch_size < 0:
        raise ValueError("batch size cannot be negative")
    return ack_set_from_bits((1 << batch_size) - 1)


def ack_set_is_unacked(ack_set: Sequence[int], index: int) -> bool:
    """True if ``index`` is still unacknowledged according to ``ack_set``."""
    if index < 0:
        raise ValueError("batch index cannot be negative")
    word = index // 64
    return word < len(ack_set) and bool((ack_set[word] >> (index % 64)) & 1)


def ack_set_acknowledge(ack_set: Sequence[int], *indexes: int) -> list[int]:
    """A new ack set with ``indexes`` marked acknowledged (their bits cleared)."""
    bits = ack_set_to_bits(ack_set)
    for index in indexes:
        if index < 0:
            raise ValueError("batch index cannot be negative")
        bits &= ~(1 << index)
    return ack_set_from_bits(bits)


def ack_set_intersect(left: Sequence[int], right: Sequence[int]) -> list[int]:
    """Indexes unacked in both: how a broker merges an incoming ack set into its stored one."""
    return ack_set_from_bits(ack_set_to_bits(left) & ack_set_to_bits(right))


def ack_set_unacked_indexes(ack_set: Sequence[int]) -> list[int]:
    """The unacknowledged indexes, ascending."""
    bits = ack_set_to_bits(ack_set)
    return [i for i in range(bits.bit_length()) if (bits >> i) & 1]


def ack_set_unacked_count(ack_set: Sequence[int]) -> int:
    return ack_set_to_bits(ack_set).bit_count()


def ack_set_cumulative(batch_size: int, through_index: int) -> list[int]:
    """Ack set of a cumulative ack of indexes 0..through_index inside a batch of batch_size."""
    bits = (1 << batch_size) - 1
    bits &= ~((1 << (through_index + 1)) - 1)
    return ack_set_from_bits(bits)
