"""The keys of the messages in one stored entry, as the compactor sees them.

Compaction works on Pulsar's message key (``partition_key``; for a batch, each message's own
``partition_key`` in its SingleMessageMetadata). A message with an empty payload (or
``null_value``) is a *tombstone*: it deletes its key. A message without a key is not compacted:
it is kept as it is (Pulsar's compactor passes messages without a key through). The pieces of a
chunked message are kept as they are too: a key's latest value must not be one chunk of many.

An entry whose metadata or batch does not parse is kept whole (``None`` here): compaction never
drops what it cannot read.

Pure functions; safe from any task.
"""

from __future__ import annotations

from dataclasses import dataclass

from magnetar.broker.entry import split_entry
from magnetar.protocol.batch import is_batch, parse_batch
from magnetar.protocol.compression import decompress
from magnetar.protocol.errors import ProtocolError


@dataclass(frozen=True, slots=True)
class MessageKey:
    """One message of an entry: its key (None: no key, kept as is) and whether it is empty."""

    key: str | None
    empty: bool = False


def entry_messages(stored: bytes) -> list[MessageKey] | None:
    """The messages of a stored entry in batch-index order; None if the entry does not parse
    (the compactor then keeps it whole)."""
    metadata, payload = split_entry(stored)
    if not metadata.IsInitialized():
        return None
    if metadata.num_chunks_from_msg > 1:
        return [MessageKey(None)]
    if not is_batch(metadata):
        if not metadata.HasField("partition_key"):
            return [MessageKey(None)]
        compressed = metadata.compression != 0
        empty = (metadata.uncompressed_size == 0) if compressed else not payload
        return [MessageKey(metadata.partition_key, empty or metadata.null_value)]
    try:
        body = decompress(metadata.compression, payload, metadata.uncompressed_size)
        items = parse_batch(body, metadata.num_messages_in_batch)
    except ProtocolError:
        return None
    return [
        MessageKey(
            item.metadata.partition_key if item.metadata.HasField("partition_key") else None,
            item.metadata.payload_size == 0 or item.metadata.null_value,
        )
        for item in items
    ]
