"""The frames written per message, encoded by hand: a broker's SEND_RECEIPT and MESSAGE, and
a producer's SEND.

Building a ``BaseCommand`` through protobuf (sub-messages, ``CopyFrom``, the body check,
``SerializeToString``) takes several times as long as writing these bytes directly
(docs/benchmarks.md: "Per-message costs" for each frame, "Broker round 3" for the effect on
the publish path). Both commands have a fixed shape, so their bytes are written directly::

    [total][cmd_size] BaseCommand{ type = SEND_RECEIPT (1), send_receipt (7) = {
        producer_id (1), sequence_id (2), message_id (3) = {ledger_id (1), entry_id (2)},
        highest_sequence_id (4)? } }

    [total][cmd_size] BaseCommand{ type = MESSAGE (1), message (9) = {
        consumer_id (1), message_id (2) = {ledger_id (1), entry_id (2), partition (3)?},
        redelivery_count (3)?, ack_set (4)* (unpacked int64), consumer_epoch (5)? } }
    [stored entry bytes]

    [total][cmd_size] BaseCommand{ type = SEND (1), send (6) = {
        producer_id (1), sequence_id (2), num_messages (3)?, highest_sequence_id (6)? } }
    [0x0e01][crc32c]?[meta_size][MessageMetadata][payload]

Fields are written in field-number order, as protobuf serialises them, so the bytes equal
what :mod:`.commands` and :mod:`.frame` produce for the same values (the unit tests compare
them). Ids are written as uint64 (two's complement for negative values, as
``to_unsigned64``). Pure functions; safe from any task or thread.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from magnetar.protocol.frame import payload_section_head
from magnetar.wire import pulsar_api_pb2 as pb

if TYPE_CHECKING:
    from mypy_extensions import i64  # native 64-bit ints when compiled; plain int otherwise

_U32 = struct.Struct(">I")
_SIZES = struct.Struct(">II")  # a frame's total and command sizes
_MASK64 = (1 << 64) - 1
# Small varints, precomputed: field lengths, producer ids and early entry ids are all small.
_SMALL = tuple(bytes((n,)) for n in range(128))
_RECEIPT_HEAD = b"\x08" + _SMALL[pb.BaseCommand.SEND_RECEIPT] + b"\x3a"  # type, then field 7
_MESSAGE_TYPE = b"\x08" + _SMALL[pb.BaseCommand.MESSAGE] + b"\x4a"  # type, then field 9
_SEND_TYPE = b"\x08" + _SMALL[pb.BaseCommand.SEND] + b"\x32"  # type, then field 6


def varint(value: int) -> bytes:
    """The protobuf base-128 varint of an unsigned value below 2^64."""
    if value < 0x80:
        return _SMALL[value]
    # Up to eight bytes (ids and times below 2^56) gathered in one native integer, then its
    # bytes in one native conversion, without the loop and its bytearray: this runs several
    # times a frame (tests.bench.per_message_costs, "varint"; a tuple of two or three bytes
    # given to bytes() cost more).
    if value < 1 << 56:
        rest: i64 = value
        packed: i64 = 0
        shift: i64 = 0
        while rest > 0x7F:
            packed |= ((rest & 0x7F) | 0x80) << shift
            rest >>= 7
            shift += 8
        packed |= rest << shift
        return int(packed).to_bytes(shift // 8 + 1, "little")
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
    receipts = _Receipts(producer_id)
    receipts.add(sequence_id, ledger_id, entry_id, highest_sequence_id)
    return b"".join(receipts.parts)


class _Receipts:
    """SEND_RECEIPT frames of one producer, as parts to join: five a frame (seven with the
    highest sequence id), each run of fields that stays the same from frame to frame encoded
    once. The sizes are counted from the parts' lengths: the body is tag + producer, tag +
    sequence, tag + size + message id, then tag + highest (if any)."""

    def __init__(self, producer_id: int) -> None:
        self.parts: list[bytes] = []
        # producer_id's tag and value, then sequence_id's tag
        self._producer = b"\x08" + varint(producer_id) + b"\x10"
        self._ledger_id: int | None = None  # (not -1: that is a ledger id the wire can carry)
        self._ledger = b""
        self._entry_size = -1
        self._message_id = b""  # the message id's tag, size, ledger field and entry tag
        self._body_size = -1
        self._head = b""  # the frame's sizes, type and body tag and size

    def add(
        self, sequence_id: int, ledger_id: int, entry_id: int, highest_sequence_id: int | None
    ) -> None:
        if ledger_id != self._ledger_id:
            self._ledger_id = ledger_id
            self._ledger = varint(ledger_id & _MASK64)
            self._entry_size = -1
        sequence = varint(sequence_id & _MASK64)
        entry = varint(entry_id & _MASK64)
        if len(entry) != self._entry_size:
            self._entry_size = len(entry)
            mid_size = 2 + len(self._ledger) + len(entry)
            self._message_id = b"\x1a" + _SMALL[mid_size] + b"\x08" + self._ledger + b"\x10"
        body_size = len(self._producer) + len(sequence) + len(self._message_id) + len(entry)
        highest = b""
        if highest_sequence_id is not None:
            highest = varint(highest_sequence_id & _MASK64)
            body_size += 1 + len(highest)
        if body_size != self._body_size:
            self._body_size = body_size
            head = varint(body_size)
            total = 3 + len(head) + body_size  # type + body tag + body size + body
            self._head = _SIZES.pack(total + 4, total) + _RECEIPT_HEAD + head
        parts = self.parts
        parts.append(self._head)
        parts.append(self._producer)
        parts.append(sequence)
        parts.append(self._message_id)
        parts.append(entry)
        if highest_sequence_id is not None:
            parts.append(b"\x20")
            parts.append(highest)


def plain_metadata(producer_name: str, sequence_id: int, publish_time: int) -> bytes:
    """The serialized MessageMetadata of a message that carries nothing but its producer
    name, sequence id and publish time: the bytes protobuf writes for those three fields,
    without building the message (a producer's unbatched send builds one per message)."""
    name = producer_name.encode()
    return b"".join(
        (
            b"\x0a",
            varint(len(name)),
            name,
            b"\x10",
            varint(sequence_id & _MASK64),
            b"\x18",
            varint(publish_time & _MASK64),
        )
    )


def schema_version_field(version: bytes) -> bytes:
    """MessageMetadata's ``schema_version`` (field 16) as protobuf writes it: appended to
    :func:`plain_metadata`'s bytes, which hold only lower fields, it gives protobuf's bytes of
    the metadata with that field set."""
    return b"\x82\x01" + varint(len(version)) + version


def send_frame(
    producer_id: int,
    sequence_id: int,
    num_messages: int,
    highest_sequence_id: int,
    metadata: bytes,
    payload: bytes,
    checksum: bool,
) -> bytes:
    """The whole SEND frame of ``payload`` under its serialized ``metadata``, with a CRC32-C
    when ``checksum`` (protocol v6 and later). ``num_messages`` and ``highest_sequence_id``
    are written when not negative (a batch's SEND carries both, a single message's neither),
    as :func:`.client_commands.send` and :func:`.frame.encode_payload_command` write them;
    the payload is copied once, into the frame."""
    body = b"\x08" + varint(producer_id) + b"\x10" + varint(sequence_id & _MASK64)
    if num_messages >= 0:
        body += b"\x18" + varint(num_messages)
    if highest_sequence_id >= 0:
        body += b"\x30" + varint(highest_sequence_id)
    command = _SEND_TYPE + varint(len(body)) + body
    section_head = payload_section_head(metadata, payload, checksum)
    size = len(command)
    total = 4 + size + len(section_head) + len(payload)
    # (to_bytes, not _SIZES.pack: a native conversion when compiled, where a pack is a call)
    return b"".join((((total << 32) | size).to_bytes(8, "big"), command, section_head, payload))


class _StoredAt(Protocol):
    """Where an entry was stored (a Position, a MessageId)."""

    @property
    def ledger_id(self) -> int: ...

    @property
    def entry_id(self) -> int: ...


class Receipted(Protocol):
    """A stored SEND, as :func:`send_receipt_frames` reads it."""

    @property
    def sequence_id(self) -> int: ...

    @property
    def highest_sequence_id(self) -> int | None: ...

    @property
    def message_id(self) -> _StoredAt | None: ...  # None: not stored (never passed here)


def send_receipt_frames(producer_id: int, sends: Sequence[Receipted]) -> bytes:
    """The SEND_RECEIPT frames of a run of one producer's stored SENDs, back to back in one
    buffer: :func:`send_receipt_frame` for each, what stays the same from one to the next
    (the producer, mostly the ledger and the sizes) encoded once."""
    receipts = _Receipts(producer_id)
    for send in sends:
        at = send.message_id
        if at is None:
            raise ValueError(f"SEND {send.sequence_id} was not stored: it gets no receipt")
        receipts.add(send.sequence_id, at.ledger_id, at.entry_id, send.highest_sequence_id)
    return b"".join(receipts.parts)


def message_frame(
    consumer_id: int,
    ledger_id: int,
    entry_id: int,
    partition: int,
    stored: bytes,
    *,
    redelivery_count: int = 0,
    ack_set: list[int] | None = None,
    consumer_epoch: int | None = None,
) -> bytes:
    """A MESSAGE frame delivering the entry whose stored bytes are ``stored`` (partition < 0:
    not written; redelivery_count written when > 0, as :func:`.commands.message`)."""
    head = message_frame_head(
        consumer_id,
        ledger_id,
        entry_id,
        partition,
        len(stored),
        redelivery_count=redelivery_count,
        ack_set=ack_set,
        consumer_epoch=consumer_epoch,
    )
    return head + stored


def message_frames(
    consumer_id: int,
    partition: int,
    consumer_epoch: int | None,
    positions: Sequence[tuple[int, int]],
    stored: Sequence[bytes],
) -> list[bytes]:
    """The MESSAGE frames of a run of entries at ``positions`` (ledger id, entry id) for one
    consumer, none of them redelivered or partly acked, as parts (each frame's head, then its
    stored bytes): :func:`message_frame_head` per entry, with what the run's frames share (the
    consumer, the partition, the epoch, mostly the ledger) encoded once."""
    consumer = b"\x08" + varint(consumer_id) + b"\x12"
    after_entry = b"\x18" + varint(partition) if partition >= 0 else b""
    epoch = b"" if consumer_epoch is None else b"\x28" + varint(consumer_epoch & _MASK64)
    parts: list[bytes] = []
    last_ledger: int | None = None  # (not -1: that is a ledger id the wire can carry)
    ledger = b""
    for i in range(len(stored)):
        data = stored[i]
        ledger_id, entry_id = positions[i]
        if ledger_id != last_ledger:
            ledger = b"\x08" + varint(ledger_id & _MASK64) + b"\x10"
            last_ledger = ledger_id
        entry = varint(entry_id & _MASK64)
        mid_size = len(ledger) + len(entry) + len(after_entry)
        body_size = len(consumer) + 1 + mid_size + len(epoch)
        head = varint(body_size)
        size = 3 + len(head) + body_size  # type + body tag + body size + body
        parts.append(
            b"".join(
                (
                    _SIZES.pack(size + 4 + len(data), size),
                    _MESSAGE_TYPE,
                    head,
                    consumer,
                    _SMALL[mid_size],
                    ledger,
                    entry,
                    after_entry,
                    epoch,
                )
            )
        )
        parts.append(data)
    return parts


def message_frame_head(
    consumer_id: int,
    ledger_id: int,
    entry_id: int,
    partition: int,
    stored_size: int,
    *,
    redelivery_count: int = 0,
    ack_set: list[int] | None = None,
    consumer_epoch: int | None = None,
) -> bytes:
    """:func:`message_frame` up to the stored bytes (``stored_size`` of them follow): written
    before them, the entry is not copied into a frame of its own."""
    message_id = [b"\x08", varint(ledger_id & _MASK64), b"\x10", varint(entry_id & _MASK64)]
    if partition >= 0:
        message_id += (b"\x18", varint(partition))
    mid = b"".join(message_id)
    parts = [b"\x08", varint(consumer_id), b"\x12", _SMALL[len(mid)], mid]
    if redelivery_count > 0:
        parts += (b"\x18", varint(redelivery_count))
    if ack_set:
        for word in ack_set:
            parts += (b"\x20", varint(word & _MASK64))
    if consumer_epoch is not None:
        parts += (b"\x28", varint(consumer_epoch & _MASK64))
    body = b"".join(parts)
    head = varint(len(body))
    size = 2 + 1 + len(head) + len(body)  # type + body tag + body size + body
    return b"".join((_U32.pack(size + 4 + stored_size), _U32.pack(size), _MESSAGE_TYPE, head, body))
