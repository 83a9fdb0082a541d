"""Batch-index acks stored with a cursor: Pulsar's ``batchedEntryDeletionIndexInfo``.

A batched entry some of whose messages were acknowledged one by one (batch-index acks) is not
yet an individually-deleted entry; the cursor keeps, per such entry, the mask of the indexes
still *unacked* (bit i set = message i unacked; the words are ``java.util.BitSet.toLongArray``
as signed int64, the same layout as a MESSAGE's or an ACK's ``ack_set``). It is persisted in
``ManagedCursorInfo.batched_entry_deletion_index_info`` beside the individually-deleted ranges,
so a restart redelivers only the unacked indexes.

Pure; raises :class:`CorruptInfo` on a record without a position.
"""

from __future__ import annotations

from collections.abc import Iterable

from magnetar.managed_ledger.errors import CorruptInfo
from magnetar.managed_ledger.position import Position, position
from magnetar.wire import ledger_pb2

_U64 = (1 << 64) - 1
_WORD = 64

BatchDeletion = tuple[Position, tuple[int, ...]]
"""(entry, unacked-index mask as signed int64 words)."""


def mask_to_words(mask: int) -> tuple[int, ...]:
    words: list[int] = []
    while mask:
        word = mask & _U64
        words.append(word - (1 << _WORD) if word >= 1 << (_WORD - 1) else word)
        mask >>= _WORD
    return tuple(words)


def words_to_mask(words: Iterable[int]) -> int:
    mask = 0
    for i, word in enumerate(words):
        mask |= (word & _U64) << (i * _WORD)
    return mask


def encode(entries: Iterable[BatchDeletion], info: ledger_pb2.ManagedCursorInfo) -> None:
    """Add ``entries`` to ``info``'s batch deletion records."""
    for pos, words in entries:
        record = info.batched_entry_deletion_index_info.add()
        record.position.ledger_id = pos.ledger_id
        record.position.entry_id = pos.entry_id
        record.delete_set.extend(words)


def decode(key: str, info: ledger_pb2.ManagedCursorInfo) -> tuple[BatchDeletion, ...]:
    """The batch deletion records of a parsed ManagedCursorInfo."""
    out: list[BatchDeletion] = []
    for record in info.batched_entry_deletion_index_info:
        if not record.HasField("position"):
            raise CorruptInfo(key, "batch deletion info without a position")
        pos = position(record.position.ledger_id, record.position.entry_id)
        out.append((pos, tuple(record.delete_set)))
    return tuple(out)
