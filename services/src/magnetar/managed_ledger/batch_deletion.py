"""Batch-index acks stored with a cursor: Pulsar's ``batchedEntryDeletionIndexInfo``.

A batched entry some of whose messages were acknowledged one by one (batch-index acks) is not
yet an individually-deleted entry; the cursor keeps, per such entry, the mask of the indexes
still *unacked* (bit i set = message i unacked; the words are ``java.util.BitSet.toLongArray``
as signed int64, the same layout as a MESSAGE's or an ACK's ``ack_set``). It is persisted in the
ManagedCursorInfo beside the individually-deleted ranges, so a restart redelivers only the
unacked indexes.

Wire form: field 5 of ``ManagedCursorInfo``, as if declared

    message BatchedEntryDeletionIndexInfo {
      Position position = 1;
      repeated int64 delete_set = 2;   // packed
    }
    repeated BatchedEntryDeletionIndexInfo batched_entry_deletion_index_info = 5;

``ledger.proto`` does not declare it yet, so this module writes and reads those bytes itself
(appended to the serialised message; read back from the parsed message's unknown fields). Once
the field is declared the stored bytes stay valid and this module can use the generated class.

Pure; raises :class:`CorruptInfo` on malformed bytes.
"""

from __future__ import annotations

from collections.abc import Iterable

from google.protobuf.message import DecodeError
from google.protobuf.unknown_fields import UnknownFieldSet

from magnetar.managed_ledger.errors import CorruptInfo
from magnetar.managed_ledger.position import Position, position
from magnetar.wire import ledger_pb2

FIELD = 5
_LEN = 2  # wire type: length-delimited
_VARINT = 0
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


def _varint(value: int) -> bytes:
    value &= _U64  # negative int64 -> its 10-byte two's complement form, as protobuf does
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _read_varint(data: bytes, i: int, key: str) -> tuple[int, int]:
    value = shift = 0
    while True:
        if i >= len(data) or shift > 63:
            raise CorruptInfo(key, "truncated varint in batch deletion info")
        byte = data[i]
        value |= (byte & 0x7F) << shift
        i += 1
        shift += 7
        if not byte & 0x80:
            return value & _U64, i


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _field(number: int, wire_type: int, payload: bytes) -> bytes:
    head = _varint(number << 3 | wire_type)
    if wire_type == _LEN:
        return head + _varint(len(payload)) + payload
    return head + payload


def encode(entries: Iterable[BatchDeletion]) -> bytes:
    """The field-5 records of ``entries`` (append them to a serialised ManagedCursorInfo)."""
    out = bytearray()
    for pos, words in entries:
        pos_pb = ledger_pb2.Position(ledger_id=pos.ledger_id, entry_id=pos.entry_id)
        record = _field(1, _LEN, pos_pb.SerializeToString())
        if words:
            record += _field(2, _LEN, b"".join(_varint(w) for w in words))
        out += _field(FIELD, _LEN, record)
    return bytes(out)


def decode(key: str, info: ledger_pb2.ManagedCursorInfo) -> tuple[BatchDeletion, ...]:
    """The field-5 records kept as unknown fields of a parsed ManagedCursorInfo."""
    out: list[BatchDeletion] = []
    fields = UnknownFieldSet(info)
    for i in range(len(fields)):
        f = fields[i]
        if f.field_number != FIELD:
            continue
        if f.wire_type != _LEN or not isinstance(f.data, bytes):
            raise CorruptInfo(key, "batch deletion info is not length-delimited")
        out.append(_decode_record(key, f.data))
    return tuple(out)


def _decode_record(key: str, data: bytes) -> BatchDeletion:
    pos: Position | None = None
    words: list[int] = []
    i = 0
    while i < len(data):
        tag, i = _read_varint(data, i, key)
        number, wire_type = tag >> 3, tag & 7
        if wire_type == _VARINT:
            value, i = _read_varint(data, i, key)
            if number == 2:
                words.append(_signed(value))
            continue
        if wire_type != _LEN:
            raise CorruptInfo(key, f"unexpected wire type {wire_type} in batch deletion info")
        size, i = _read_varint(data, i, key)
        if i + size > len(data):
            raise CorruptInfo(key, "truncated batch deletion info")
        chunk, i = data[i : i + size], i + size
        if number == 1:
            try:
                pos_pb = ledger_pb2.Position.FromString(chunk)
            except DecodeError as exc:
                raise CorruptInfo(key, str(exc)) from exc
            pos = position(pos_pb.ledger_id, pos_pb.entry_id)
        elif number == 2:
            j = 0
            while j < len(chunk):
                value, j = _read_varint(chunk, j, key)
                words.append(_signed(value))
    if pos is None:
        raise CorruptInfo(key, "batch deletion info without a position")
    return pos, tuple(words)
