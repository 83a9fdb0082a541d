"""Batch and single-message building: metadata fields, limits, compression, message ids."""

from __future__ import annotations

import pytest

from magnetar.client.batch_builder import BatchBuilder, PendingMessage, build_single
from magnetar.client.compression import CompressionType, decompress
from magnetar.protocol.batch import parse_batch
from magnetar.protocol.message_id import MessageId
from magnetar.wire import pulsar_api_pb2 as pb


def msg(seq: int, payload: bytes = b"p", **kw: object) -> PendingMessage:
    return PendingMessage(payload=payload, sequence_id=seq, **kw)  # type: ignore[arg-type]


def test_single_message_metadata() -> None:
    op = build_single(
        msg(7, b"hello", key="k", properties={"a": "1"}, event_time_ms=123, ordering_key=b"o"),
        producer_name="p",
        codec=CompressionType.NONE,
        publish_time_ms=1000,
    )
    md = op.metadata
    assert (md.producer_name, md.sequence_id, md.publish_time) == ("p", 7, 1000)
    assert md.partition_key == "k"
    assert md.ordering_key == b"o"
    assert md.event_time == 123
    assert [(kv.key, kv.value) for kv in md.properties] == [("a", "1")]
    assert not md.HasField("num_messages_in_batch")
    # NONE: neither compression nor uncompressed_size is set (C++ client behaviour)
    assert not md.HasField("compression")
    assert not md.HasField("uncompressed_size")
    assert op.payload == b"hello"
    assert not op.is_batch
    assert op.message_ids(3, 4, 2) == [MessageId(3, 4, -1, 2)]


def test_no_event_time_means_field_absent() -> None:
    op = build_single(msg(0), producer_name="p", codec=CompressionType.NONE, publish_time_ms=1)
    assert not op.metadata.HasField("event_time")
    assert not op.metadata.HasField("partition_key")


def test_a_plain_single_message_is_encoded_as_protobuf_would() -> None:
    """A bare payload's metadata is written by hand: the SEND carries protobuf's bytes; asked
    for, the metadata is the message (then it is what the send writes, schema named)."""
    op = build_single(msg(9, b"bare"), producer_name="p\u00e9", codec=CompressionType.NONE,
                      publish_time_ms=1234)  # fmt: skip
    expected = pb.MessageMetadata(producer_name="p\u00e9", sequence_id=9, publish_time=1234)
    assert op.metadata_bytes() == expected.SerializeToString()
    op.name_schema(b"\x00\x01")
    expected.schema_version = b"\x00\x01"
    assert op.metadata_bytes() == expected.SerializeToString()  # named without a parse
    assert op.metadata == expected
    assert op.metadata_bytes() == expected.SerializeToString()
    keyed = build_single(msg(9, b"bare", key="k"), producer_name="p", codec=CompressionType.NONE,
                         publish_time_ms=1234)  # fmt: skip
    assert keyed.metadata.partition_key == "k"  # not plain: built as protobuf


@pytest.mark.parametrize("codec", list(CompressionType))
def test_batch_round_trips_through_the_protocol_codec(codec: CompressionType) -> None:
    builder = BatchBuilder(max_messages=10, max_bytes=10_000)
    for i in range(3):
        builder.add(msg(10 + i, b"m%d" % i * 50, key=f"k{i}", properties={"i": str(i)}))
    op = builder.build(producer_name="prod", codec=codec, publish_time_ms=5)
    assert builder.empty
    assert op.is_batch
    md = op.metadata
    assert md.num_messages_in_batch == 3
    assert md.sequence_id == 10
    assert (op.sequence_id, op.highest_sequence_id) == (10, 12)
    if codec is CompressionType.NONE:
        assert not md.HasField("compression")
        raw = op.payload
    else:
        assert md.compression == int(codec)
        raw = decompress(md.compression, op.payload, md.uncompressed_size)
    items = parse_batch(raw, 3)
    assert [i.payload for i in items] == [b"m%d" % i * 50 for i in range(3)]
    assert [i.metadata.partition_key for i in items] == ["k0", "k1", "k2"]
    assert [i.metadata.sequence_id for i in items] == [10, 11, 12]
    assert items[1].metadata.properties[0] == pb.KeyValue(key="i", value="1")
    ids = op.message_ids(1, 2, -1)
    assert ids == [MessageId(1, 2, i, -1, 3) for i in range(3)]
    assert all(i.batch_size == 3 for i in ids)


def test_limits_count_and_bytes() -> None:
    builder = BatchBuilder(max_messages=2, max_bytes=100)
    assert builder.has_space(msg(0, b"x" * 200))  # an empty batch takes anything
    assert not builder.fits_alone(msg(0, b"x" * 101))  # oversized: goes alone
    assert not builder.fits_alone(msg(0, deliver_at_ms=5))  # delayed: goes alone
    builder.add(msg(0, b"x" * 60))
    assert not builder.has_space(msg(1, b"x" * 41))
    assert builder.has_space(msg(1, b"x" * 40))
    builder.add(msg(1, b"x" * 40))
    assert builder.full
    assert len(builder) == 2
    assert builder.size_bytes == 100
    assert not builder.has_space(msg(2, b""))
    with pytest.raises(ValueError):
        BatchBuilder(max_messages=0)
    with pytest.raises(ValueError):
        BatchBuilder().build(producer_name="p", codec=CompressionType.NONE, publish_time_ms=0)


def test_plain_and_keyed_messages_mix_in_one_batch() -> None:
    # Plain messages are encoded from a reused template: each keeps its own size and id.
    builder = BatchBuilder(max_messages=10, max_bytes=10_000)
    payloads = [b"a", b"bb" * 300, b"ccc", b"d" * 200]
    for i, payload in enumerate(payloads):
        builder.add(msg(7 + i, payload, key="k" if i == 2 else None))
    op = builder.build(producer_name="prod", codec=CompressionType.NONE, publish_time_ms=5)
    items = parse_batch(op.payload, 4)
    assert [i.payload for i in items] == payloads
    assert [i.metadata.sequence_id for i in items] == [7, 8, 9, 10]
    assert [i.metadata.payload_size for i in items] == [len(p) for p in payloads]
    assert [i.metadata.HasField("partition_key") for i in items] == [False, False, True, False]
    assert [i.metadata.partition_key for i in items][2] == "k"
