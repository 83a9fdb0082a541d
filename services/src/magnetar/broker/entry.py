"""What the broker reads from a stored entry: its MessageMetadata (message count, key, time).

A persistent entry is exactly what followed the SEND command: ``[0x0e01][crc32c][meta_size]
[MessageMetadata][payload]`` (the checksum part is optional). The broker never rewrites it; it
only peeks at the metadata to count permits (a batch is ``num_messages_in_batch`` messages), to
route by key, to hold delayed messages back and to seek by publish time. The payload (possibly
compressed) is never parsed on the delivery path; only the admin's message views
(:mod:`.message_view`) open it.

:func:`entry_info` (once per entry a subscription dispatches, then kept with the cached entry)
does not build a MessageMetadata: one pass over the metadata's wire bytes picks the fields the
dispatcher needs and skips the rest, and anything unexpected falls back to protobuf. In this
compiled module the pass costs about a third of a parse, and less than reading the same fields
from the MessageMetadata the frame decoder already built at publish time (protobuf attribute
reads are the dear part), which is why the publish side does not hand its parse over.

Pure functions; safe from any task.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from google.protobuf.message import DecodeError

from magnetar.broker.dispatch import ChunkTag
from magnetar.protocol.batch import is_batch, message_count
from magnetar.protocol.frame import MAGIC_CRC32C
from magnetar.protocol.hand_decoded import ascii_span
from magnetar.wire import pulsar_api_pb2 as pb

_U32 = struct.Struct(">I")
_U16 = struct.Struct(">H")


class EntryInfo(NamedTuple):
    """The facts the dispatcher needs about one entry.

    A NamedTuple rather than a frozen dataclass: one is built for every entry dispatched, and
    a frozen dataclass's ``__init__`` (one ``object.__setattr__`` a field) cost about four
    times as much (``python -m tests.bench.per_message_costs -k EntryInfo``)."""

    messages: int
    key: bytes
    publish_time: int
    batched: bool
    deliver_at: int = 0  # deliver_at_time (epoch ms); 0: at once
    chunk: ChunkTag | None = None  # a chunk of a chunked message


_new_tuple = tuple.__new__


def entry_metadata(stored: bytes) -> pb.MessageMetadata:
    """The MessageMetadata of a stored entry; an empty one if the bytes are not parseable.
    The payload after it is not copied (the dispatcher asks for this once an entry)."""
    return _parse_metadata(stored)[0]


def split_entry(stored: bytes) -> tuple[pb.MessageMetadata, bytes]:
    """The MessageMetadata of a stored entry and the (possibly compressed) payload after it;
    an empty metadata and no payload if the bytes are not parseable."""
    metadata, end = _parse_metadata(stored)
    return metadata, stored[end:] if end else b""


def _parse_metadata(stored: bytes) -> tuple[pb.MessageMetadata, int]:
    """The MessageMetadata and where the payload starts (0: not parseable, empty metadata)."""
    offset = 0
    if len(stored) >= 6 and _U16.unpack_from(stored, 0)[0] == MAGIC_CRC32C:
        offset = 6
    metadata = pb.MessageMetadata()
    if len(stored) < offset + 4:
        return metadata, 0
    (size,) = _U32.unpack_from(stored, offset)
    end = offset + 4 + size
    try:
        metadata.MergeFromString(stored[offset + 4 : end])
    except (DecodeError, ValueError, RuntimeError):
        return pb.MessageMetadata(), 0
    if not _strings_readable(metadata):
        return pb.MessageMetadata(), 0
    return metadata, end


def _strings_readable(metadata: pb.MessageMetadata) -> bool:
    """Whether every string field of ``metadata`` reads as a str: protobuf parses a string
    field that is not UTF-8, then hands it over as bytes or raises TypeError when it is read,
    where every reader expects str (deduplication's replay, the replicator, the compactor,
    the message view and the dispatcher would each fail on it, at every retry). The string
    fields of MessageMetadata and of the messages in it (pulsar_api.proto), read one by one:
    under half the time of a walk over ``ListFields``."""
    try:
        if not (
            type(metadata.producer_name) is str
            and type(metadata.partition_key) is str
            and type(metadata.replicated_from) is str
            and type(metadata.uuid) is str
            and type(metadata.encryption_algo) is str
            and all(type(name) is str for name in metadata.replicate_to)
            and all(_pair_readable(pair) for pair in metadata.properties)
        ):
            return False
        for key in metadata.encryption_keys:
            if type(key.key) is not str or not all(_pair_readable(p) for p in key.metadata):
                return False
    except (TypeError, ValueError):
        return False
    return True


def _pair_readable(pair: pb.KeyValue) -> bool:
    return type(pair.key) is str and type(pair.value) is str


def entry_info(stored: bytes) -> EntryInfo:
    """The dispatcher's facts about a stored entry, read straight from the metadata's wire
    bytes (:func:`_scan_info`); anything the scan does not expect falls back to protobuf, so
    both give the same answer (tests/property/test_entry_info.py)."""
    info = _scan_info(stored)
    if info is not None:
        return info
    # entry_metadata gives an empty metadata for one that does not parse or has a string
    # field that is not UTF-8 (_strings_readable): an error here would stop the entry's
    # subscription at it for good, every step meeting it again.
    return entry_info_of(entry_metadata(stored))


def entry_info_of(metadata: pb.MessageMetadata) -> EntryInfo:
    """:func:`entry_info` from an already parsed MessageMetadata."""
    if metadata.HasField("ordering_key"):
        key = metadata.ordering_key
    else:
        key = metadata.partition_key.encode()
    chunks = metadata.num_chunks_from_msg
    return EntryInfo(
        messages=max(1, message_count(metadata)),
        key=key,
        publish_time=metadata.publish_time,
        batched=is_batch(metadata),
        deliver_at=metadata.deliver_at_time,
        chunk=ChunkTag(
            (metadata.producer_name, metadata.uuid),
            metadata.chunk_id,
            metadata.chunk_id >= chunks - 1,
        )
        if chunks > 1
        else None,
    )


# MessageMetadata field numbers the dispatcher reads (pulsar_api.proto).
_PRODUCER_NAME = 1
_PUBLISH_TIME = 3
_PARTITION_KEY = 6
_NUM_MESSAGES_IN_BATCH = 11
_ORDERING_KEY = 18
_DELIVER_AT_TIME = 19
_UUID = 26
_NUM_CHUNKS = 27
_CHUNK_ID = 29
_U64 = (1 << 64) - 1


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _int64(value: int) -> int:
    value &= _U64
    return value - (1 << 64) if value >= 1 << 63 else value


def _scan_info(stored: bytes) -> EntryInfo | None:
    """:func:`entry_info` without building a MessageMetadata: one pass over the metadata's
    fields, skipping those the dispatcher does not need. None when anything is unexpected (a
    truncated entry, a group, a malformed varint, a bad UTF-8 name): the caller then parses.

    Protobuf rules kept: the last occurrence of a field wins; int32 fields are the low 32 bits
    of their varint, signed; uint64/int64 the low 64 bits."""
    n = len(stored)
    offset = 0
    if n >= 6 and stored[0] == 0x0E and stored[1] == 0x01:
        offset = 6
    if n < offset + 4:
        return None
    size = (
        (stored[offset] << 24)
        | (stored[offset + 1] << 16)
        | (stored[offset + 2] << 8)
        | stored[offset + 3]
    )
    i = offset + 4
    end = i + size
    if end > n:
        return None
    batched = False
    batch = 0
    publish_time = deliver_at = chunk_id = num_chunks = 0
    ordering: bytes | None = None
    partition = b""
    # Where the producer name and uuid are (sliced only for a chunk's tag, checked as UTF-8).
    producer_at = producer_end = uuid_at = uuid_end = 0
    while i < end:
        # The tag, then the value: a varint (wire type 0), 8 or 4 bytes (1, 5) or a length and
        # that many bytes (2). Field numbers above 15 take a two-byte tag.
        tag = 0
        shift = 0
        while True:
            if i >= end or shift > 28:
                return None
            b = stored[i]
            i += 1
            tag |= (b & 0x7F) << shift
            if b < 0x80:
                break
            shift += 7
        field = tag >> 3
        wire = tag & 7
        if field == 0:
            return None
        if wire == 0:
            value = 0
            shift = 0
            while True:
                if i >= end or shift > 63:
                    return None
                b = stored[i]
                i += 1
                value |= (b & 0x7F) << shift
                if b < 0x80:
                    break
                shift += 7
            if field == _PUBLISH_TIME:
                publish_time = value & _U64
            elif field == _NUM_MESSAGES_IN_BATCH:
                batch = _int32(value)
                batched = True
            elif field == _DELIVER_AT_TIME:
                deliver_at = _int64(value)
            elif field == _NUM_CHUNKS:
                num_chunks = _int32(value)
            elif field == _CHUNK_ID:
                chunk_id = _int32(value)
        elif wire == 2:
            length = 0
            shift = 0
            while True:
                if i >= end or shift > 28:
                    return None
                b = stored[i]
                i += 1
                length |= (b & 0x7F) << shift
                if b < 0x80:
                    break
                shift += 7
            if i + length > end:
                return None
            if field == _PARTITION_KEY:
                partition = stored[i : i + length]
            elif field == _ORDERING_KEY:
                ordering = stored[i : i + length]
            elif field == _PRODUCER_NAME:
                producer_at, producer_end = i, i + length
            elif field == _UUID:
                uuid_at, uuid_end = i, i + length
            i += length
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        else:
            return None
    if i != end or _bad_utf8(partition):
        return None
    names_ascii = ascii_span(stored, producer_at, producer_end) and ascii_span(
        stored, uuid_at, uuid_end
    )
    if not names_ascii and (
        _bad_utf8(stored[producer_at:producer_end]) or _bad_utf8(stored[uuid_at:uuid_end])
    ):
        return None
    chunk: ChunkTag | None = None
    if num_chunks > 1:
        chunk = ChunkTag(
            (stored[producer_at:producer_end].decode(), stored[uuid_at:uuid_end].decode()),
            chunk_id,
            chunk_id >= num_chunks - 1,
        )
    key = ordering if ordering is not None else partition
    messages = (batch if batch > 1 else 1) if batched else 1
    # NamedTuple's generated __new__ is a Python-level lambda, even called from compiled code:
    # the tuple is built directly (one per entry dispatched).
    return _new_tuple(EntryInfo, (messages, key, publish_time, batched, deliver_at, chunk))


def _bad_utf8(text: bytes) -> bool:
    """True if ``text`` is not valid UTF-8 (protobuf hands such a string field over as bytes)."""
    if text.isascii():
        return False
    try:
        text.decode()
    except UnicodeDecodeError:
        return True
    return False
