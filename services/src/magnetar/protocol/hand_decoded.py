"""The frames received per message, read from the wire: a broker's SEND and ACK, a
producer's SEND_RECEIPT and a consumer's MESSAGE command.

The publish path reads six things of a SEND: the producer and sequence ids, the highest
sequence id (if one was sent), the message count, the chunk the metadata names, and the bytes
it stores. Parsing the ``BaseCommand`` and the ``MessageMetadata`` with protobuf, checking
both are initialized and then reading those fields back out of the messages cost about 2 us
of the 4.4 us a 1 KiB SEND took to decode (``python -m tests.bench.per_message_costs``).
:func:`scan_send` gets the same answer in one pass over each part's wire bytes. An ACK of
whole entries (the usual one: no ack sets) is read the same way by :func:`scan_ack`, the ids
straight into (ledger id, entry id) pairs, at about a fifth of the cost of the parse and the
attribute reads per id.

A scan accepts only what protobuf would accept and reads it as protobuf does; anything it does
not expect makes it return None and the frame decoder parses the frame with protobuf instead
(and raises the usual errors for a bad one). What a SEND scan expects:

* the command holds only ``type`` (SEND) and one ``send`` body whose fields are all scalars
  (no ``message_id``), with both required ids;
* the section is ``[0x0e01][crc32c]?[meta_size][MessageMetadata][payload]`` (no broker entry
  metadata: clients do not send it) with a checksum that matches, when one is checked;
* every metadata field is one of MessageMetadata's own, with its declared wire type, the
  required three are there, and each ``properties`` entry holds just its required key and
  value (``encryption_keys`` falls back).

What an ACK scan expects: ``type`` (ACK) and one ``ack`` body of scalars and message ids, with
its required consumer id and a known ack type; each id holds its two required fields and
scalars only (an ``ack_set`` or a ``first_chunk_message_id`` falls back, as do the ack's
``properties``).

What a receipt scan expects: ``type`` (SEND_RECEIPT) and one ``send_receipt`` body with its
two required ids and a message id of scalars with its two required fields (a receipt without
a message id falls back).

What a MESSAGE scan expects (the command only; its payload section is parsed as before):
``type`` (MESSAGE) and one ``message`` body of scalars, ``ack_set`` words (unpacked) and a
message id of its two required fields and a partition at most (a batch index, ack set, batch
size or first chunk id in the id falls back, as does a packed ``ack_set``).

Protobuf rules kept: the last occurrence of a scalar wins; int32 fields are the low 32 bits
of their varint, signed; a varint is at most ten bytes. tests/property/test_hand_decoded_*.py
compare the scans with protobuf on generated, changed and random frames.

Pure functions; safe from any task or thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, NamedTuple

from crc32c import crc32c as _crc

from magnetar.checksum import COMBINE_FROM, KEEP_GIL, crc32c_combine
from magnetar.wire import pulsar_api_pb2 as pb

if TYPE_CHECKING:
    from mypy_extensions import i64  # native 64-bit ints when compiled; plain int otherwise

SEND_TYPE: Final = pb.BaseCommand.SEND
ACK_TYPE: Final = pb.BaseCommand.ACK
SEND_RECEIPT_TYPE: Final = pb.BaseCommand.SEND_RECEIPT
MESSAGE_TYPE: Final = pb.BaseCommand.MESSAGE
_INT64_MAX: Final = (1 << 63) - 1
_TOP_HALF: Final = 1 << 62  # twice this is a uint64's top bit
_VIEW_FROM: Final = 16384  # sections from this size are checksummed through a memoryview


def _mask(*fields: int) -> int:
    return sum(1 << field for field in fields)


# (Final: the compiled module reads these as constants, not from the module's dict.)
# Wire types of MessageMetadata's fields (pulsar_api.proto) as bit masks by field number: a
# varint (wire type 0) or length-delimited (2).
_VARINT_FIELDS: Final = _mask(2, 3, 8, 9, 11, 12, 17, 19, 20, 22, 23, 24, 25, 27, 28, 29, 30)
_BYTES_FIELDS: Final = _mask(1, 5, 6, 7, 14, 15, 16, 18, 26)
_PROPERTIES: Final = 4
_NUM_CHUNKS: Final = 27
_UUID: Final = 26
_CHUNK_ID: Final = 29
# CommandSend's fields 1-8 are varints; field 9 (message_id) is a message and falls back.
_LAST_SEND_FIELD: Final = 8
_PARTITION_KEY: Final = 6
_NUM_MESSAGES_IN_BATCH: Final = 11
_ORDERING_KEY: Final = 18
_DELIVER_AT_TIME: Final = 19
_NOT_EXPECTED: Final = (False, 0, 0, None, -1)


class SendFrame(NamedTuple):
    """One SEND: what the broker's publish path reads of it.

    A NamedTuple, as :class:`~magnetar.protocol.frame.Frame`: one is built for every SEND."""

    producer_id: int
    sequence_id: int
    highest_sequence_id: int | None  # None: the SEND did not carry one
    num_messages: int  # as sent (int32; 1 when absent)
    chunk: tuple[int, int] | None  # (chunk_id, num_chunks_from_msg) of a chunked message
    # [0x0e01][crc][meta_size][meta][payload] as received: what the broker stores.
    stored: bytes
    # What a dispatcher reads of the metadata, read on the way: (messages, key, deliver_at),
    # as broker.entry.entry_info gives them (messages: num_messages_in_batch when batched and
    # above 1, else 1; key: the ordering key if set, else the partition key; deliver_at: epoch
    # ms, 0 at once). None for a chunk, or a producer name, uuid or partition key that is not
    # ASCII: the dispatcher reads the entry itself then.
    facts: tuple[int, bytes, int] | None = None
    # crc32c(stored), where the scan verified the SEND's checksum and ``stored`` is at least
    # COMBINE_FROM long (combined from that checksum, no pass of its own); -1 otherwise. The
    # entry digest is then combined from it too (ledger.digest.digest_from_crc).
    stored_crc: int = -1

    @property
    def type(self) -> int:
        return SEND_TYPE

    @property
    def metadata(self) -> pb.MessageMetadata:
        """The MessageMetadata, parsed when asked for (a replicator's SEND asks; the bytes were
        checked when the frame was decoded)."""
        stored = self.stored
        offset = 6 if stored[:2] == b"\x0e\x01" else 0
        size = int.from_bytes(stored[offset : offset + 4], "big")
        metadata = pb.MessageMetadata()
        metadata.MergeFromString(stored[offset + 4 : offset + 4 + size])
        return metadata


# NamedTuple's generated __new__ is a Python-level lambda (as in .frame).
_new_tuple = tuple.__new__


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


class _Reader:
    """A cursor over ``data[pos:end]``; ``ok`` turns False at the first thing not expected."""

    def __init__(self, data: bytes, pos: int, end: int) -> None:
        self.data = data
        self.pos = pos
        self.end = end
        self.ok = True

    def varint(self, limit: int) -> int:
        """A varint of at most ``limit`` bytes (5 for a tag or length, 10 for a value), as
        :func:`_uvarint` reads it; a value from 2^63 on as the uint64 it is."""
        value, pos = _uvarint(self.data, self.pos, self.end, 7 * limit)
        if pos < 0:
            self.ok = False
            return 0
        self.pos = pos
        return _uint64(value)

    def length(self) -> int:
        """A length prefix; where its bytes start is ``pos``, and they fit before ``end``."""
        n = self.varint(5)
        if n > self.end - self.pos:
            self.ok = False
            return 0
        return n


def scan_send(command: bytes, section: bytes, verify_checksum: bool) -> SendFrame | None:
    """The SEND that ``command`` (a BaseCommand's bytes) and ``section`` (what followed it)
    make, or None if anything is not as expected (then parse the frame with protobuf)."""
    body = _send_body(command)
    if body is None:
        return None
    expected, chunk_id, num_chunks, facts, stored_crc = _scan_section(section, verify_checksum)
    if not expected:
        return None
    producer_id, sequence_id, highest, num_messages = body
    chunk = None
    if num_chunks > 1:
        chunk = (chunk_id, num_chunks)
        facts = None
    return _new_tuple(
        SendFrame,
        (producer_id, sequence_id, highest, num_messages, chunk, section, facts, stored_crc),
    )


def _body_of(data: bytes, start: int, kind: int) -> tuple[int, int]:
    """Where the body of the BaseCommand in ``data[start:]`` is, if it holds just ``type`` (=
    ``kind``) and one body in the field of that number (a BaseCommand's body field number is
    its type's value); (-1, -1) otherwise."""
    pos: i64 = start
    end: i64 = len(data)
    body_at: i64 = -1
    body_end: i64 = -1
    typed = False
    while pos < end:
        tag, pos = _uvarint(data, pos, end, 35)
        if pos < 0:
            return -1, -1
        if tag == 0x08:  # type
            value, pos = _uvarint(data, pos, end, 64)
            if pos < 0 or value != kind:
                return -1, -1
            typed = True
        elif tag == (kind << 3) | 2 and body_at < 0:
            n, pos = _uvarint(data, pos, end, 35)
            if pos < 0 or n > end - pos:
                return -1, -1
            body_at, body_end = pos, pos + n
            pos = body_end
        else:
            return -1, -1
    if not (typed and body_at >= 0):
        return -1, -1
    return int(body_at), int(body_end)


def _send_body(command: bytes) -> tuple[int, int, int | None, int] | None:
    """(producer_id, sequence_id, highest_sequence_id, num_messages) of a SEND command.

    Read with :func:`_uvarint` in native integers (no reader object): the command of a SEND
    is read for every message."""
    body_at, body_end = _body_of(command, 0, SEND_TYPE)
    if body_at < 0:
        return None
    pos: i64 = body_at
    end: i64 = body_end
    producer_id: i64 = 0
    sequence_id: i64 = 0
    highest: i64 = 0
    seen = 0  # bits: 1 producer id, 2 sequence id, 4 highest sequence id
    num_messages: i64 = 1
    while pos < end:
        tag, pos = _uvarint(command, pos, end, 35)
        if pos < 0:
            return None
        field = tag >> 3
        if tag & 7 != 0 or not 1 <= field <= _LAST_SEND_FIELD:
            return None
        value, pos = _uvarint(command, pos, end, 64)
        if pos < 0:
            return None
        if field == 1:
            producer_id = value
            seen |= 1
        elif field == 2:
            sequence_id = value
            seen |= 2
        elif field == 3:
            num_messages = _int32(value)
        elif field == 6:
            highest = value
            seen |= 4
    if seen & 3 != 3:
        return None
    return (
        _uint64(producer_id),
        _uint64(sequence_id),
        _uint64(highest) if seen & 4 else None,
        int(num_messages),
    )


def _uint64(value: i64) -> int:
    """The uint64 whose bits the native ``value`` holds (:func:`_uvarint`'s result)."""
    return int(value) if value >= 0 else int(value) + (1 << 64)


def _uvarint(data: bytes, pos: i64, end: i64, bits: i64) -> tuple[i64, i64]:
    """The varint at ``data[pos:end]`` and the position after it; the position is -1 when it
    runs past ``end`` or has more than ``bits`` bits (35: a tag's or a length's five bytes;
    64: a value's ten). A value from 2^63 on comes back as its two's complement (negative):
    the int64 or int32 an int field means, or a uint64 the caller must not take as one."""
    value: i64 = 0
    shift: i64 = 0
    while pos < end and shift < bits:
        b: i64 = data[pos]
        pos += 1
        if shift == 63:  # the tenth byte: only its lowest bit fits in 64 bits
            if b > 1:
                return 0, -1
            if b == 1:
                value = value - _TOP_HALF - _TOP_HALF  # value + 2^63, wrapped to 64 bits
            return value, pos
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
    return 0, -1


def u32_at(data: bytes, pos: int) -> int:
    """The big-endian uint32 at ``data[pos:pos + 4]`` (in range), without a slice."""
    return (data[pos] << 24) | (data[pos + 1] << 16) | (data[pos + 2] << 8) | data[pos + 3]


def _scan_section(
    section: bytes, verify_checksum: bool
) -> tuple[bool, int, int, tuple[int, bytes, int] | None, int]:
    """(as expected, chunk_id, num_chunks_from_msg, :attr:`SendFrame.facts`,
    :attr:`SendFrame.stored_crc`) of a SEND's payload section. Protobuf's rules for the facts:
    the last occurrence of a field wins; int32 fields are their varint's low 32 bits, signed,
    int64 its low 64 bits."""
    size = len(section)
    pos = 0
    stored_crc = -1
    if size >= 2 and section[0] == 0x0E and section[1] == 0x01:
        if size < 6:
            return _NOT_EXPECTED
        pos = 6
        # A copy of the covered bytes is cheaper than a memoryview of them up to about 16 KiB
        # (a batched entry of big messages is 100 KiB and more: 6.8 against 4.5 us at 128 KiB).
        if verify_checksum:
            covered = section[6:] if size < _VIEW_FROM else memoryview(section)[6:]
            checksum = u32_at(section, 2)
            if _crc(covered, 0, KEEP_GIL) != checksum:
                return _NOT_EXPECTED
            if size >= COMBINE_FROM:  # the checksum covers section[6:]; its six bytes go first
                stored_crc = crc32c_combine(_crc(section[:6]), checksum, size - 6)
    elif size >= 2 and section[0] == 0x0E and section[1] == 0x02:
        return _NOT_EXPECTED  # broker entry metadata: clients do not send it
    if size - pos < 4:
        return _NOT_EXPECTED
    meta_size = u32_at(section, pos)
    at: i64 = pos + 4  # read in native integers (no reader object): every SEND's metadata
    end: i64 = at + meta_size
    if end > size:
        return _NOT_EXPECTED
    required = 0
    num_chunks = chunk_id = deliver_at = 0
    messages = 1
    partition_at = partition_end = ordering_at = 0
    ordering_end = -1  # no ordering key
    names_ascii = True  # the producer name and uuid (what the dispatcher's read checks too)
    while at < end:
        tag, at = _uvarint(section, at, end, 35)
        if at < 0:
            return _NOT_EXPECTED
        field = tag >> 3
        wire = tag & 7
        if field > 31:  # (the masks below shift natively: a count past 63 is undefined)
            return _NOT_EXPECTED
        if wire == 0 and (_VARINT_FIELDS >> field) & 1:
            value, at = _uvarint(section, at, end, 64)
            if at < 0:
                return _NOT_EXPECTED
            if field == 2:
                required |= 2
            elif field == 3:
                required |= 4
            elif field == _NUM_CHUNKS:
                num_chunks = _int32(value)
            elif field == _CHUNK_ID:
                chunk_id = _int32(value)
            elif field == _NUM_MESSAGES_IN_BATCH:
                batch = _int32(value)
                messages = batch if batch > 1 else 1
            elif field == _DELIVER_AT_TIME:
                deliver_at = int(value)
        elif wire == 2 and (_BYTES_FIELDS >> field) & 1:
            n, at = _uvarint(section, at, end, 35)
            if at < 0 or n > end - at:
                return _NOT_EXPECTED
            if field == _PARTITION_KEY:
                partition_at, partition_end = int(at), int(at + n)
            elif field == _ORDERING_KEY:
                ordering_at, ordering_end = int(at), int(at + n)
            elif field == 1 or field == _UUID:
                names_ascii = names_ascii and ascii_span(section, at, at + n)
            at += n
            if field == 1:
                required |= 1
        elif wire == 2 and field == _PROPERTIES:
            n, at = _uvarint(section, at, end, 35)
            if at < 0 or n > end - at or not _key_value(section, at, at + n):
                return _NOT_EXPECTED
            at += n
        else:
            return _NOT_EXPECTED
    if required != 7:
        return _NOT_EXPECTED
    if not (names_ascii and ascii_span(section, partition_at, partition_end)):
        return True, chunk_id, num_chunks, None, stored_crc  # the dispatcher's read settles them
    if ordering_end >= 0:
        key = section[ordering_at:ordering_end]
    else:
        key = section[partition_at:partition_end] if partition_end > partition_at else b""
    return True, chunk_id, num_chunks, (messages, key, deliver_at), stored_crc


def ascii_span(data: bytes, start: int, end: int) -> bool:
    """``data[start:end].isascii()`` without the slice (a plain loop: compiled, no generator;
    the SEND scan's and the dispatcher's metadata reads both use it)."""
    k = start
    while k < end and data[k] < 0x80:
        k += 1
    return k >= end


def _key_value(data: bytes, pos: int, end: int) -> bool:
    """A KeyValue holding just its two required strings."""
    r = _Reader(data, pos, end)
    seen = 0
    while r.pos < r.end:
        tag = r.varint(5)
        if tag == 0x0A:
            seen |= 1
        elif tag == 0x12:
            seen |= 2
        else:
            return False
        n = r.length()
        r.pos += n
        if not r.ok:
            return False
    return seen == 3


class AckFrame(NamedTuple):
    """An ACK of whole entries: what the broker's ack path reads of it."""

    consumer_id: int
    cumulative: bool
    request_id: int | None  # set: the client wants an ACK_RESPONSE
    # (ledger id, entry id) of each acked entry, as signed 64-bit ids (the wire's are uint64).
    entries: list[tuple[int, int]]

    @property
    def type(self) -> int:
        return ACK_TYPE


_CUMULATIVE: Final = pb.CommandAck.Cumulative
# CommandAck's varint fields: consumer_id, ack_type, validation_error, the txn ids, request_id.
_ACK_VARINTS: Final = _mask(1, 2, 4, 6, 7, 8)
_MESSAGE_ID: Final = 3
# MessageIdData's varint fields: ledger_id, entry_id, partition, batch_index, batch_size.
_ID_VARINTS: Final = _mask(1, 2, 3, 4, 6)


def _int64(value: int) -> int:
    return value if value <= _INT64_MAX else value - (1 << 64)


def scan_ack(data: bytes, start: int) -> AckFrame | None:
    """The ACK that ``data[start:]`` (a BaseCommand's bytes) is, or None if anything is not as
    expected (then parse it with protobuf)."""
    body_at, body_end = _body_of(data, start, ACK_TYPE)
    if body_at < 0:
        return None
    r = _Reader(data, body_at, body_end)
    consumer_id = ack_type = -1
    request_id: int | None = None
    entries: list[tuple[int, int]] = []
    while r.pos < r.end:
        tag = r.varint(5)
        field = tag >> 3
        wire = tag & 7
        if wire == 0 and (_ACK_VARINTS >> field) & 1:
            value = r.varint(10)
            if field == 1:
                consumer_id = value
            elif field == 2:
                ack_type = value
            elif field == 8:
                request_id = value
        elif wire == 2 and field == _MESSAGE_ID:
            ledger_id, entry_id, _ = _read_id(r, _ID_VARINTS)
            if ledger_id < 0:
                return None
            entries.append((_int64(ledger_id), _int64(entry_id)))
        else:
            return None
        if not r.ok:
            return None
    if consumer_id < 0 or not 0 <= ack_type <= _CUMULATIVE:
        return None
    return _new_tuple(AckFrame, (consumer_id, ack_type == _CUMULATIVE, request_id, entries))


class ReceiptFrame(NamedTuple):
    """A SEND_RECEIPT: what a producer reads of it (one arrives for every SEND)."""

    producer_id: int
    sequence_id: int
    # Where the SEND's entry was stored, as signed 64-bit ids (the wire's are uint64).
    ledger_id: int
    entry_id: int

    @property
    def type(self) -> int:
        return SEND_RECEIPT_TYPE


_RECEIPT_PRODUCER: Final = 0x08  # tags: field 1, 2 and 4 varints, field 3 a message
_RECEIPT_SEQUENCE: Final = 0x10
_RECEIPT_MESSAGE_ID: Final = 0x1A
_RECEIPT_HIGHEST: Final = 0x20


def scan_receipt(data: bytes, start: int) -> ReceiptFrame | None:
    """The SEND_RECEIPT that ``data[start:]`` (a BaseCommand's bytes) is, or None if anything
    is not as expected (then parse it with protobuf)."""
    body_at, body_end = _body_of(data, start, SEND_RECEIPT_TYPE)
    if body_at < 0:
        return None
    pos: i64 = body_at
    end: i64 = body_end
    producer_id: i64 = 0
    sequence_id: i64 = 0
    seen = 0  # bits: 1 producer id, 2 sequence id
    ledger_id = entry_id = -1
    while pos < end:
        tag, pos = _uvarint(data, pos, end, 35)
        if pos < 0:
            return None
        if tag in (_RECEIPT_PRODUCER, _RECEIPT_SEQUENCE, _RECEIPT_HIGHEST):
            value, pos = _uvarint(data, pos, end, 64)
            if pos < 0:
                return None
            if tag == _RECEIPT_PRODUCER:
                producer_id = value
                seen |= 1
            elif tag == _RECEIPT_SEQUENCE:
                sequence_id = value
                seen |= 2
        elif tag == _RECEIPT_MESSAGE_ID:
            # A second message id would merge into the first: take it only when whole.
            n, pos = _uvarint(data, pos, end, 35)
            if pos < 0 or n > end - pos:
                return None
            ledger_id, entry_id, _ = _id_fields(data, pos, pos + n, _ID_VARINTS)
            if ledger_id < 0:
                return None
            pos += n
        else:
            return None
    if seen & 3 != 3 or ledger_id < 0:
        return None
    return _new_tuple(
        ReceiptFrame,
        (_uint64(producer_id), _uint64(sequence_id), _int64(ledger_id), _int64(entry_id)),
    )


class Delivery(NamedTuple):
    """A MESSAGE command: what a consumer reads of it (one arrives for every entry)."""

    consumer_id: int
    # The entry, as signed 64-bit ids (the wire's are uint64), and the partition its id names
    # (-1: none).
    ledger_id: int
    entry_id: int
    partition: int
    redelivery_count: int
    ack_set: list[int]  # the batch's ack set words (empty: none)
    consumer_epoch: int  # -1: not on the wire


# CommandMessage's tags: consumer_id, redelivery_count, consumer_epoch and the ack set words
# are varints; the message id a message of its own.
_DELIVERY_CONSUMER: Final = 0x08
_DELIVERY_MESSAGE_ID: Final = 0x12
_DELIVERY_REDELIVERIES: Final = 0x18
_DELIVERY_ACK_WORD: Final = 0x20
_DELIVERY_EPOCH: Final = 0x28


def scan_message(command: bytes) -> Delivery | None:
    """The MESSAGE that ``command`` (a BaseCommand's bytes) is, or None if anything is not as
    expected (then parse it with protobuf)."""
    body_at, body_end = _body_of(command, 0, MESSAGE_TYPE)
    if body_at < 0:
        return None
    r = _Reader(command, body_at, body_end)
    consumer_id = ledger_id = entry_id = epoch = -1
    partition = -1
    redeliveries = 0
    ack_set: list[int] = []
    while r.pos < r.end:
        tag = r.varint(5)
        if tag == _DELIVERY_MESSAGE_ID:
            if ledger_id >= 0:  # a second id merges into the first: protobuf
                return None
            ledger_id, entry_id, partition = _read_id(r, _ENTRY_ID_FIELDS)
            if ledger_id < 0:
                return None
        elif tag == _DELIVERY_CONSUMER:
            consumer_id = r.varint(10)
        elif tag == _DELIVERY_REDELIVERIES:
            redeliveries = r.varint(10) & 0xFFFFFFFF  # uint32: the low 32 bits
        elif tag == _DELIVERY_ACK_WORD:
            ack_set.append(_int64(r.varint(10)))
        elif tag == _DELIVERY_EPOCH:
            epoch = r.varint(10)
        else:
            return None
        if not r.ok:
            return None
    if consumer_id < 0 or ledger_id < 0:
        return None
    return _new_tuple(
        Delivery,
        (
            consumer_id,
            _int64(ledger_id),
            _int64(entry_id),
            partition,
            redeliveries,
            ack_set,
            epoch,
        ),
    )


def delivery_of(message: pb.CommandMessage) -> Delivery:
    """The :class:`Delivery` of a MESSAGE command parsed with protobuf (the id's batch index
    and batch size, which no broker sends for an entry, are not kept)."""
    mid = message.message_id
    return Delivery(
        message.consumer_id,
        _int64(mid.ledger_id),
        _int64(mid.entry_id),
        mid.partition,
        message.redelivery_count,
        list(message.ack_set),
        message.consumer_epoch if message.HasField("consumer_epoch") else -1,
    )


# The fields of a MESSAGE's entry id the consumer reads: ledger_id, entry_id, partition.
_ENTRY_ID_FIELDS: Final = _mask(1, 2, 3)


def _read_id(r: _Reader, allowed: int) -> tuple[int, int, int]:
    """:func:`_id_fields` of the length-delimited MessageIdData at ``r``'s cursor, which then
    moves past it; (-1, -1, -1) when it is not one (or its length does not fit)."""
    n = r.length()
    if not r.ok:
        return -1, -1, -1
    at = r.pos
    r.pos += n
    return _id_fields(r.data, at, at + n, allowed)


def _id_fields(data: bytes, pos: int, end: int, allowed: int) -> tuple[int, int, int]:
    """(ledger_id, entry_id, partition) of a MessageIdData of varint fields in ``allowed`` (a
    mask by field number) only, the ids as uint64, partition -1 when absent; (-1, -1, -1)
    when it is not one or lacks a required id. (Native integers: one is read per receipt.)"""
    at: i64 = pos
    stop: i64 = end
    ledger_id: i64 = 0
    entry_id: i64 = 0
    partition = -1
    seen = 0  # bits: 1 ledger id, 2 entry id
    while at < stop:
        tag, at = _uvarint(data, at, stop, 35)
        if at < 0:
            return -1, -1, -1
        field = tag >> 3  # (field > 31 first: the mask shifts natively)
        if tag & 7 != 0 or field > 31 or not (allowed >> field) & 1:
            return -1, -1, -1
        value, at = _uvarint(data, at, stop, 64)
        if at < 0:
            return -1, -1, -1
        if field == 1:
            ledger_id = value
            seen |= 1
        elif field == 2:
            entry_id = value
            seen |= 2
        elif field == 3:
            partition = _int32(value)
    if not seen & 2:
        return -1, -1, -1
    return _uint64(ledger_id) if seen & 1 else -1, _uint64(entry_id), partition
