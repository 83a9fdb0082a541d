"""Batch payload format: build, parse, and typed errors for bad batches."""

from __future__ import annotations

import struct

import pytest

from magnetar.protocol.batch import build_batch, is_batch, message_count, parse_batch
from magnetar.protocol.errors import MalformedBatch
from magnetar.wire import pulsar_api_pb2 as pb


def single(key: str | None = None) -> pb.SingleMessageMetadata:
    meta = pb.SingleMessageMetadata(payload_size=0)
    if key is not None:
        meta.partition_key = key
    return meta


def test_build_and_parse() -> None:
    payload = build_batch([(single("a"), b"one"), (single(), b""), (single("c"), b"three")])
    items = parse_batch(payload, 3)
    assert [item.payload for item in items] == [b"one", b"", b"three"]
    assert [item.metadata.partition_key for item in items] == ["a", "", "c"]
    assert [item.metadata.payload_size for item in items] == [3, 0, 5]


def test_layout() -> None:
    meta = pb.SingleMessageMetadata(payload_size=2).SerializeToString()
    assert build_batch([(single(), b"hi")]) == struct.pack(">I", len(meta)) + meta + b"hi"


def test_is_batch_is_presence_not_value() -> None:
    meta = pb.MessageMetadata(producer_name="p", sequence_id=1, publish_time=1)
    assert not is_batch(meta)
    assert message_count(meta) == 1
    meta.num_messages_in_batch = 1
    assert is_batch(meta)
    meta.num_messages_in_batch = 7
    assert message_count(meta) == 7


@pytest.mark.parametrize(
    ("payload", "count"),
    [
        (b"", 1),  # missing size
        (b"\x00\x00\x00\x10\x18", 1),  # metadata longer than payload
        (struct.pack(">I", 2) + b"\x18\x05" + b"abc", 1),  # payload_size 5 > 3 remaining
        (struct.pack(">I", 0), 1),  # metadata lacks payload_size
        (struct.pack(">I", 2) + b"\xff\xff", 1),  # metadata does not parse
        (build_batch([(single(), b"x")]) + b"extra", 1),  # bytes after the last message
        (b"", -1),
    ],
)
def test_malformed_batches(payload: bytes, count: int) -> None:
    with pytest.raises(MalformedBatch):
        parse_batch(payload, count)
