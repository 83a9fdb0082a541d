"""The admin's view of a stored message (broker side) read back by the admin client: what one
writes in headers and body the other must recover, for plain, batched and compressed entries."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from magnetar.broker.message_view import UnreadableMessage, iso_millis, message_view
from magnetar.client.admin_messages import AdminMessage, messages_from_answer
from magnetar.ids import EntryId, LedgerId
from magnetar.managed_ledger import Position
from magnetar.protocol.batch import build_batch
from magnetar.protocol.compression import CompressionType, compress
from magnetar.wire import pulsar_api_pb2 as pb

POS = Position(LedgerId(7), EntryId(3))


def _stored(metadata: pb.MessageMetadata, payload: bytes) -> bytes:
    meta = metadata.SerializeToString()
    return struct.pack(">I", len(meta)) + meta + payload


def _metadata(**fields: object) -> pb.MessageMetadata:
    return pb.MessageMetadata(
        producer_name="p", sequence_id=5, publish_time=1_700_000_000_123, **fields
    )  # type: ignore[arg-type]


def _read_back(stored: bytes) -> list[AdminMessage]:
    view = message_view(POS, stored)
    return messages_from_answer({k.lower(): v for k, v in view.headers.items()}, view.body)


def test_a_plain_message_round_trips() -> None:
    meta = _metadata(partition_key="k", event_time=1_700_000_000_999)
    meta.properties.add(key="a", value="1")
    meta.properties.add(
        key="naïve key", value="ünïcode"
    )  # no per-key header; the JSON one carries it
    view = message_view(POS, _stored(meta, b"hello"))
    assert view.body == b"hello"
    assert view.headers["X-Pulsar-Message-ID"] == "7:3"
    assert view.headers["X-Pulsar-PROPERTY-a"] == "1"
    assert "X-Pulsar-PROPERTY-naïve key" not in view.headers
    assert view.headers["X-Pulsar-publish-time"] == "2023-11-14T22:13:20.123Z"
    assert all(v.isascii() for v in view.headers.values())
    (message,) = _read_back(_stored(meta, b"hello"))
    assert message.properties == {"a": "1", "naïve key": "ünïcode"}
    assert message.key == "k"
    assert message.sequence_id == 5


@given(
    payloads=st.lists(st.binary(max_size=64), min_size=1, max_size=8),
    codec=st.sampled_from(list(CompressionType)),
)
def test_a_compressed_batch_splits_into_its_messages(
    payloads: list[bytes], codec: CompressionType
) -> None:
    items = []
    for i, data in enumerate(payloads):
        single = pb.SingleMessageMetadata(payload_size=len(data))
        single.properties.add(key="i", value=str(i))
        items.append((single, data))
    batch = build_batch(items)
    meta = _metadata(num_messages_in_batch=len(payloads))
    if codec is not CompressionType.NONE:
        meta.compression = pb.CompressionType.Value(codec.name)
        meta.uncompressed_size = len(batch)
    messages = _read_back(_stored(meta, compress(codec, batch)))
    assert [m.payload for m in messages] == payloads
    assert [m.message_id for m in messages] == [f"7:3:{i}" for i in range(len(payloads))]
    assert [m.properties for m in messages] == [{"i": str(i)} for i in range(len(payloads))]


def test_an_entry_that_does_not_decompress_is_named() -> None:
    meta = _metadata(compression=pb.LZ4, uncompressed_size=1000)
    with pytest.raises(UnreadableMessage, match="7:3"):
        message_view(POS, _stored(meta, b"not lz4 at all"))


def test_garbage_is_unreadable_not_a_crash() -> None:
    with pytest.raises(UnreadableMessage):
        message_view(POS, b"\x00\x00\x00\x05garbage")


def test_iso_millis() -> None:
    assert iso_millis(0) == "1970-01-01T00:00:00.000Z"
    assert iso_millis(1_700_000_000_007) == "2023-11-14T22:13:20.007Z"
