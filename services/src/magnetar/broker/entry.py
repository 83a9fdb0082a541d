"""What the broker reads from a stored entry: its MessageMetadata (message count, key, time).

A persistent entry is exactly what followed the SEND command: ``[0x0e01][crc32c][meta_size]
[MessageMetadata][payload]`` (the checksum part is optional). The broker never rewrites it; it
only peeks at the metadata to count permits (a batch is ``num_messages_in_batch`` messages), to
route by key, to hold delayed messages back and to seek by publish time. The payload (possibly
compressed) is never parsed on the delivery path; only the admin's message views
(:mod:`.message_view`) open it.

Pure functions; safe from any task.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from google.protobuf.message import DecodeError

from magnetar.broker.dispatch import ChunkTag
from magnetar.protocol.batch import is_batch, message_count
from magnetar.protocol.frame import MAGIC_CRC32C
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
    return metadata, end


def entry_info(stored: bytes) -> EntryInfo:
    metadata = entry_metadata(stored)
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
