"""The consumer's sans-I/O receive side: permits, batch unpacking, a reader's start filter."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from magnetar.client.compression import compress
from magnetar.client.errors import DecompressionError, InvalidConfiguration
from magnetar.client.receiver import ConsumerOptions, ReceiverPermits, is_prior, unpack_entry
from magnetar.protocol.batch import build_batch, parse_batch
from magnetar.protocol.errors import MalformedBatch
from magnetar.protocol.hand_decoded import Delivery, delivery_of
from magnetar.protocol.message_id import EARLIEST, LATEST, MessageId, ack_set_from_bits
from magnetar.wire import pulsar_api_pb2 as pb

TOPIC = "persistent://public/default/t"


def message_command(entry: int = 4, *, redeliveries: int = 0, ack_set: int | None = None,
                    partition: int | None = None) -> Delivery:  # fmt: skip
    """A MESSAGE command, as the consumer is given it."""
    cmd = pb.CommandMessage(consumer_id=1, message_id=MessageId(3, entry).to_proto())
    if partition is not None:
        cmd.message_id.partition = partition
    if redeliveries:
        cmd.redelivery_count = redeliveries
    if ack_set is not None:
        cmd.ack_set.extend(ack_set_from_bits(ack_set))
    return delivery_of(cmd)


def batch(
    n: int, codec: pb.CompressionType.ValueType = pb.NONE
) -> tuple[pb.MessageMetadata, bytes]:
    items = []
    for i in range(n):
        single = pb.SingleMessageMetadata(payload_size=0, sequence_id=10 + i)
        single.properties.add(key="i", value=str(i))
        if i % 2:
            single.partition_key = f"k{i}"
            single.event_time = 1000 + i
        items.append((single, f"m{i}".encode()))
    raw = build_batch(items)
    meta = pb.MessageMetadata(producer_name="p", sequence_id=10, publish_time=77,
                              num_messages_in_batch=n)  # fmt: skip
    if codec != pb.NONE:
        meta.compression = codec
        meta.uncompressed_size = len(raw)
    return meta, compress(codec, raw)


def test_permits_initial_then_refill_at_half() -> None:
    p = ReceiverPermits(10)
    assert p.initial() == 10
    assert [p.release() for _ in range(5)] == [0, 0, 0, 0, 5]
    assert p.release(7) == 7
    assert ReceiverPermits(1).release() == 1


@given(st.integers(1, 50), st.lists(st.integers(1, 30), max_size=40))
def test_permits_are_conserved(size: int, releases: list[int]) -> None:
    p = ReceiverPermits(size)
    p.initial()
    sent = sum(p.release(n) for n in releases)
    assert sent <= sum(releases) < sent + p.threshold + max(releases, default=0)
    assert sum(releases) - sent < p.threshold


def test_single_message() -> None:
    meta = pb.MessageMetadata(producer_name="p", sequence_id=5, publish_time=9,
                              partition_key="k", event_time=3)  # fmt: skip
    meta.properties.add(key="a", value="b")
    out = unpack_entry(TOPIC, message_command(redeliveries=2), meta, b"hello")
    (m,) = out.messages
    assert out.charged == 1
    assert out.batch_size == 0
    assert (m.data, m.key, dict(m.properties), m.event_time_ms) == (b"hello", "k", {"a": "b"}, 3)
    assert (m.redelivery_count, m.sequence_id, m.producer_name) == (2, 5, "p")
    assert m.message_id == MessageId(3, 4)


@pytest.mark.parametrize("codec", [pb.NONE, pb.LZ4, pb.ZLIB, pb.ZSTD, pb.SNAPPY])
def test_batch_of_every_codec(codec: pb.CompressionType.ValueType) -> None:
    meta, payload = batch(5, codec)
    out = unpack_entry(TOPIC, message_command(partition=2), meta, payload)
    assert [m.data for m in out.messages] == [f"m{i}".encode() for i in range(5)]
    assert [m.key for m in out.messages] == [None, "k1", None, "k3", None]
    assert [m.message_id.batch_index for m in out.messages] == list(range(5))
    assert {m.message_id.partition for m in out.messages} == {2}
    assert out.messages[3].event_time_ms == 1003
    assert out.messages[0].event_time_ms is None
    assert [m.sequence_id for m in out.messages] == [10, 11, 12, 13, 14]
    assert out.charged == 5
    assert out.batch_size == 5


def test_batch_skips_indexes_the_broker_marks_acknowledged() -> None:
    meta, payload = batch(5)
    out = unpack_entry(TOPIC, message_command(ack_set=0b10010), meta, payload)
    assert [m.message_id.batch_index for m in out.messages] == [1, 4]
    assert out.charged == 2


def test_corrupt_payload_raises() -> None:
    meta, payload = batch(3, pb.ZSTD)
    with pytest.raises(DecompressionError):
        unpack_entry(TOPIC, message_command(), meta, payload[:-4])


def test_is_prior_matches_the_cpp_client() -> None:
    start = MessageId(3, 4)
    assert is_prior(MessageId(3, 3), start, inclusive=True)
    assert not is_prior(MessageId(3, 4), start, inclusive=True)
    assert is_prior(MessageId(3, 4), start, inclusive=False)
    assert is_prior(MessageId(3, 4, 9), start, inclusive=False)  # the whole entry
    assert not is_prior(MessageId(3, 5), start, inclusive=False)
    bstart = MessageId(3, 4, 2)
    assert is_prior(MessageId(3, 4, 1), bstart, inclusive=True)
    assert not is_prior(MessageId(3, 4, 2), bstart, inclusive=True)
    assert is_prior(MessageId(3, 4, 2), bstart, inclusive=False)
    assert not is_prior(MessageId(3, 4, 3), bstart, inclusive=False)
    assert not is_prior(MessageId(0, 0), EARLIEST, inclusive=False)
    assert not is_prior(MessageId(0, 0), LATEST, inclusive=False)


def test_options_are_validated() -> None:
    with pytest.raises(InvalidConfiguration):
        ConsumerOptions(receiver_queue_size=0)
    with pytest.raises(InvalidConfiguration):
        ConsumerOptions(ack_timeout_s=-1)
    assert not ConsumerOptions(subscription_type=1).allows_cumulative_ack  # type: ignore[arg-type]


def _reference(meta: pb.MessageMetadata, raw: bytes) -> list[tuple[object, ...]]:
    """What the protobuf-only batch parser (magnetar.protocol.batch) reads."""
    out = []
    for index, item in enumerate(parse_batch(raw, meta.num_messages_in_batch)):
        s = item.metadata
        out.append((
            b"" if s.null_value else item.payload,
            s.partition_key if s.HasField("partition_key") else None,
            {kv.key: kv.value for kv in s.properties},
            s.event_time or None,
            s.sequence_id if s.HasField("sequence_id") else meta.sequence_id + index,
            s.ordering_key if s.HasField("ordering_key") else None,
        ))  # fmt: skip
    return out


_single = st.fixed_dictionaries(
    {},
    optional={
        "sequence_id": st.integers(0, 2**64 - 1),
        "event_time": st.integers(0, 2**64 - 1),
        "null_value": st.booleans(),
        "partition_key": st.text(max_size=3),
        "ordering_key": st.binary(max_size=3),
        "null_partition_key": st.booleans(),
    },
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_single, st.binary(max_size=300)), min_size=1, max_size=6))
def test_batch_fast_path_reads_what_protobuf_reads(items: list[tuple[dict, bytes]]) -> None:  # type: ignore[type-arg]
    raw = build_batch((pb.SingleMessageMetadata(payload_size=0, **f), p) for f, p in items)
    meta = pb.MessageMetadata(producer_name="p", sequence_id=5, publish_time=7,
                              num_messages_in_batch=len(items))  # fmt: skip
    out = unpack_entry(TOPIC, message_command(), meta, raw)
    got = [(m.data, m.key, dict(m.properties), m.event_time_ms, m.sequence_id, m.ordering_key)
           for m in out.messages]  # fmt: skip
    assert got == _reference(meta, raw)
    assert [m.message_id.batch_index for m in out.messages] == list(range(len(items)))


def test_batch_with_properties_and_compacted_out_takes_the_protobuf_path() -> None:
    a = pb.SingleMessageMetadata(payload_size=0, sequence_id=1, compacted_out=True)
    b = pb.SingleMessageMetadata(payload_size=0)
    b.properties.add(key="x", value="y")
    raw = build_batch([(a, b"gone"), (b, b"kept")])
    meta = pb.MessageMetadata(producer_name="p", sequence_id=9, publish_time=7,
                              num_messages_in_batch=2)  # fmt: skip
    out = unpack_entry(TOPIC, message_command(), meta, raw, partition=3)
    (m,) = out.messages
    assert (m.data, dict(m.properties), m.sequence_id, out.charged) == (b"kept", {"x": "y"}, 10, 2)
    assert m.message_id == MessageId(3, 4, 1, 3)


@pytest.mark.parametrize(
    "raw",
    [
        b"\x00\x00",  # no metadata size
        b"\x00\x00\x00\x09\x18\x01",  # metadata longer than the payload
        b"\x00\x00\x00\x02\x18\x05ab",  # payload does not fit
        b"\x00\x00\x00\x02\x40\x05",  # no payload_size
        b"\x00\x00\x00\x02\x18\xff",  # truncated varint
        b"\x00\x00\x00\x02\x18\x01ab",  # bytes after the last message
    ],
)
def test_malformed_batches_raise(raw: bytes) -> None:
    meta = pb.MessageMetadata(producer_name="p", num_messages_in_batch=1)
    with pytest.raises(MalformedBatch):
        unpack_entry(TOPIC, message_command(), meta, raw)
