"""The batch format: many messages in one entry's payload.

A batch payload (after decompression) is, for each message i in 0..n-1::

    [single_meta_size u32 BE][SingleMessageMetadata][payload_i of payload_size bytes]

n is the outer MessageMetadata's ``num_messages_in_batch``; the presence of that field — not
its value — is what marks an entry as a batch (the C++ client's rule). Compression applies to
the whole batch payload; this module only handles uncompressed bytes.

Pure functions; safe from any task or thread.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass

from google.protobuf.message import DecodeError, EncodeError

from magnetar.protocol.errors import MalformedBatch
from magnetar.wire import pulsar_api_pb2 as pb

_U32 = struct.Struct(">I")


@dataclass(frozen=True)
class BatchItem:
    """One message of a batch."""

    metadata: pb.SingleMessageMetadata
    payload: bytes


def is_batch(metadata: pb.MessageMetadata) -> bool:
    """True if the entry is a batch (num_messages_in_batch present, whatever its value)."""
    return metadata.HasField("num_messages_in_batch")


def message_count(metadata: pb.MessageMetadata) -> int:
    """Messages in an entry: what a consumer's permits are counted in."""
    return metadata.num_messages_in_batch if is_batch(metadata) else 1


def parse_batch(payload: bytes, num_messages: int) -> list[BatchItem]:
    """Split an uncompressed batch payload into its ``num_messages`` messages."""
    if num_messages < 0:
        raise MalformedBatch(f"negative message count {num_messages}")
    view = memoryview(payload)
    items: list[BatchItem] = []
    offset = 0
    for index in range(num_messages):
        if len(view) - offset < 4:
            raise MalformedBatch(f"message {index}: metadata size missing")
        (meta_size,) = _U32.unpack_from(view, offset)
        offset += 4
        if meta_size > len(view) - offset:
            raise MalformedBatch(f"message {index}: metadata longer than the payload")
        metadata = pb.SingleMessageMetadata()
        try:
            metadata.MergeFromString(bytes(view[offset : offset + meta_size]))
        except (DecodeError, ValueError, RuntimeError) as exc:
            raise MalformedBatch(f"message {index}: metadata does not parse: {exc}") from exc
        if not metadata.IsInitialized():
            raise MalformedBatch(f"message {index}: metadata lacks payload_size")
        offset += meta_size
        size = metadata.payload_size
        if size < 0 or size > len(view) - offset:
            raise MalformedBatch(f"message {index}: payload of {size} bytes does not fit")
        items.append(BatchItem(metadata, bytes(view[offset : offset + size])))
        offset += size
    if offset != len(view):
        raise MalformedBatch(f"{len(view) - offset} bytes after the last message")
    return items


def build_batch(items: Iterable[tuple[pb.SingleMessageMetadata, bytes]]) -> bytes:
    """Concatenate messages into a batch payload; sets each payload_size to its payload."""
    parts: list[bytes] = []
    for metadata, payload in items:
        single = pb.SingleMessageMetadata()
        single.CopyFrom(metadata)
        single.payload_size = len(payload)
        try:
            raw = single.SerializeToString()
        except EncodeError as exc:
            raise MalformedBatch(str(exc)) from exc
        parts += (_U32.pack(len(raw)), raw, payload)
    return b"".join(parts)
