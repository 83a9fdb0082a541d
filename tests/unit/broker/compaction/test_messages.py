"""The keys the compactor reads from stored entries: plain, batched (compressed or not),
keyless, tombstones (empty payload or null_value), chunks, and entries that do not parse."""

from __future__ import annotations

import struct

import pytest

from magnetar.broker.compaction.messages import MessageKey, entry_messages
from magnetar.protocol.batch import build_batch
from magnetar.protocol.compression import CompressionType, compress
from magnetar.wire import pulsar_api_pb2 as pb


def stored(metadata: pb.MessageMetadata, payload: bytes) -> bytes:
    meta = metadata.SerializeToString()
    return struct.pack(">I", len(meta)) + meta + payload


def metadata(**fields: object) -> pb.MessageMetadata:
    return pb.MessageMetadata(producer_name="p", sequence_id=1, publish_time=1, **fields)  # type: ignore[arg-type]


def batch(items: list[tuple[str | None, bytes, bool]], codec: CompressionType) -> bytes:
    singles = []
    for key, payload, null in items:
        single = pb.SingleMessageMetadata(payload_size=len(payload), null_value=null)
        if key is not None:
            single.partition_key = key
        singles.append((single, payload))
    body = build_batch(singles)
    meta = metadata(num_messages_in_batch=len(items), compression=int(codec))
    meta.uncompressed_size = len(body)
    return stored(meta, compress(codec, body))


def test_a_plain_keyed_message() -> None:
    assert entry_messages(stored(metadata(partition_key="k"), b"v")) == [MessageKey("k")]


def test_a_message_without_key_is_not_compacted() -> None:
    assert entry_messages(stored(metadata(), b"v")) == [MessageKey(None)]


@pytest.mark.parametrize(
    ("meta", "payload"),
    [
        (metadata(partition_key="k"), b""),
        (metadata(partition_key="k", null_value=True), b"ignored"),
    ],
)
def test_tombstones(meta: pb.MessageMetadata, payload: bytes) -> None:
    assert entry_messages(stored(meta, payload)) == [MessageKey("k", empty=True)]


def test_a_compressed_empty_payload_is_a_tombstone() -> None:
    meta = metadata(partition_key="k", compression=pb.ZLIB, uncompressed_size=0)
    assert entry_messages(stored(meta, compress(CompressionType.ZLIB, b""))) == [
        MessageKey("k", empty=True)
    ]


@pytest.mark.parametrize("codec", list(CompressionType))
def test_a_batch_is_read_message_by_message(codec: CompressionType) -> None:
    entry = batch(
        [("a", b"1", False), (None, b"2", False), ("b", b"", False), ("c", b"x", True)], codec
    )
    assert entry_messages(entry) == [
        MessageKey("a"),
        MessageKey(None),
        MessageKey("b", empty=True),
        MessageKey("c", empty=True),
    ]


def test_a_chunk_is_kept_as_it_is() -> None:
    meta = metadata(partition_key="k", num_chunks_from_msg=3, chunk_id=1, uuid="u")
    assert entry_messages(stored(meta, b"part")) == [MessageKey(None)]


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00\x00\x00\x50garbage",
        stored(metadata(num_messages_in_batch=3), b"\x00\x00\x00\x01"),  # a broken batch
    ],
)
def test_what_does_not_parse_is_kept_whole(data: bytes) -> None:
    assert entry_messages(data) is None
