"""SEND_RECEIPT frames written by hand: the one command a broker sends for every SEND.

Building a ``BaseCommand`` through protobuf (sub-messages, ``CopyFrom``, the body check,
``SerializeToString``) costs about as much as the rest of answering a SEND. A receipt has a
fixed shape, so :func:`send_receipt_frame` writes its bytes directly::

    [total][cmd_size] BaseCommand{ type = SEND_RECEIPT (1), send_receipt (7) = {
        producer_id (1), sequence_id (2), message_id (3) = {ledger_id (1), entry_id (2)},
        highest_sequence_id (4)? } }

Fields are written in field-number order, as protobuf serialises them, so the bytes equal
``encode_command(commands.send_receipt(...))`` for the same values (the unit tests compare the
two). Ids are written as uint64 (two's complement for negative values, as ``to_unsigned64``).
Pure functions; safe from any task or thread.
"""

from __future__ import annotations

import struct

from magnetar.wire import pulsar_api_pb2 as pb

_U32 = struct.Struct(">I")
_MASK64 = (1 << 64) - 1
# Small varints, precomputed: field lengths, producer ids and early entry ids are all small.
_SMALL = tuple(bytes((n,)) for n in range(128))
_TYPE = b"\x08" + _SMALL[pb.BaseCommand.SEND_RECEIPT]  # field 1, varint


def varint(value: int) -> bytes:
    """The protobuf base-128 varint of an unsigned value below 2^64."""
    if value < 0x80:
        return _SMALL[value]
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def send_receipt_frame(
    producer_id: int,
    sequence_id: int,
    ledger_id: int,
    entry_id: int,
    highest_sequence_id: int | None = None,
) -> bytes:
    """The whole SEND_RECEIPT frame for an entry stored at (ledger_id, entry_id)."""
    ledger = varint(ledger_id & _MASK64)
    entry = varint(entry_id & _MASK64)
    parts = [b"\x08", varint(producer_id), b"\x10", varint(sequence_id & _MASK64), b"\x1a",
             _SMALL[len(ledger) + len(entry) + 2], b"\x08", ledger, b"\x10", entry]  # fmt: skip
    if highest_sequence_id is not None:
        parts += (b"\x20", varint(highest_sequence_id & _MASK64))
    body = b"".join(parts)
    size = len(body)
    head = varint(size)
    total = 3 + len(head) + size  # type + body tag + body size + body
    return b"".join((_U32.pack(total + 4), _U32.pack(total), _TYPE, b"\x3a", head, body))
