"""Hypothesis: batch build/parse, message id wire form and ordering, ack-set algebra."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from magnetar.protocol.batch import build_batch, parse_batch
from magnetar.protocol.message_id import (
    INT64_MAX,
    INT64_MIN,
    MessageId,
    ack_set_acknowledge,
    ack_set_all_unacked,
    ack_set_from_bits,
    ack_set_intersect,
    ack_set_is_unacked,
    ack_set_to_bits,
    ack_set_unacked_indexes,
)
from magnetar.wire import pulsar_api_pb2 as pb

i64 = st.integers(min_value=INT64_MIN, max_value=INT64_MAX)
message_ids = st.builds(
    MessageId,
    ledger_id=i64,
    entry_id=i64,
    batch_index=st.integers(min_value=-1, max_value=2**31 - 1),
    partition=st.integers(min_value=-1, max_value=2**31 - 1),
)
singles = st.builds(
    lambda key, props, seq: pb.SingleMessageMetadata(
        payload_size=0,
        properties=[pb.KeyValue(key=k, value=v) for k, v in props.items()],
        **({"partition_key": key} if key is not None else {}),
        **({"sequence_id": seq} if seq is not None else {}),
    ),
    st.none() | st.text(max_size=10),
    st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3),
    st.none() | st.integers(min_value=0, max_value=2**64 - 1),
)


@given(st.lists(st.tuples(singles, st.binary(max_size=100)), max_size=20))
def test_batch_round_trip(items: list[tuple[pb.SingleMessageMetadata, bytes]]) -> None:
    parsed = parse_batch(build_batch(items), len(items))
    assert [p.payload for p in parsed] == [payload for _, payload in items]
    for got, (meta, payload) in zip(parsed, items, strict=True):
        assert got.metadata.payload_size == len(payload)
        assert got.metadata.partition_key == meta.partition_key
        assert list(got.metadata.properties) == list(meta.properties)


@given(message_ids)
def test_message_id_wire_round_trip(message_id: MessageId) -> None:
    data = pb.MessageIdData.FromString(message_id.to_proto().SerializeToString())
    assert MessageId.from_proto(data) == message_id


@given(st.lists(message_ids, min_size=2, max_size=10))
def test_message_id_order_is_ledger_entry_batch(ids: list[MessageId]) -> None:
    key = sorted(ids, key=lambda m: (m.ledger_id, m.entry_id, m.batch_index, m.partition))
    assert sorted(ids) == key


@given(st.integers(min_value=0, max_value=2**200))
def test_ack_set_bits_round_trip(bits: int) -> None:
    words = ack_set_from_bits(bits)
    assert all(INT64_MIN <= w <= INT64_MAX for w in words)
    assert not words or words[-1] != 0  # trailing zero words trimmed, as BitSet does
    assert ack_set_to_bits(words) == bits


@given(st.integers(min_value=0, max_value=300), st.data())
def test_acknowledge_matches_a_set_model(batch_size: int, data: st.DataObject) -> None:
    acked = data.draw(st.sets(st.integers(min_value=0, max_value=max(batch_size - 1, 0))))
    acked = {i for i in acked if i < batch_size}
    ack_set = ack_set_acknowledge(ack_set_all_unacked(batch_size), *acked)
    expected = [i for i in range(batch_size) if i not in acked]
    assert ack_set_unacked_indexes(ack_set) == expected
    assert all(ack_set_is_unacked(ack_set, i) == (i not in acked) for i in range(batch_size))


@given(st.integers(min_value=0, max_value=2**130), st.integers(min_value=0, max_value=2**130))
def test_intersect_is_and(a: int, b: int) -> None:
    left, right = ack_set_from_bits(a), ack_set_from_bits(b)
    assert ack_set_to_bits(ack_set_intersect(left, right)) == a & b
