"""MessageId wire form, sentinels, ordering; ack-set bit helpers in the BitSet layout."""

from __future__ import annotations

import pytest

from magnetar.protocol.errors import InvalidMessageId
from magnetar.protocol.message_id import (
    EARLIEST,
    INT64_MAX,
    LATEST,
    MessageId,
    ack_set_acknowledge,
    ack_set_all_unacked,
    ack_set_cumulative,
    ack_set_from_bits,
    ack_set_intersect,
    ack_set_is_unacked,
    ack_set_to_bits,
    ack_set_unacked_count,
    ack_set_unacked_indexes,
)
from magnetar.wire import pulsar_api_pb2 as pb


def test_earliest_travels_as_all_ones() -> None:
    data = EARLIEST.to_proto()
    assert (data.ledger_id, data.entry_id) == (2**64 - 1, 2**64 - 1)
    assert MessageId.from_proto(data) == EARLIEST
    assert not data.HasField("partition")
    assert data.partition == -1  # the proto2 default


def test_latest_is_int64_max() -> None:
    data = LATEST.to_proto()
    assert (data.ledger_id, data.entry_id) == (INT64_MAX, INT64_MAX)
    assert MessageId.from_proto(data) == LATEST


def test_from_proto_reads_defaults() -> None:
    message_id = MessageId.from_proto(pb.MessageIdData(ledger_id=3, entry_id=4))
    assert message_id == MessageId(3, 4, batch_index=-1, partition=-1)


def test_round_trip_with_all_fields() -> None:
    message_id = MessageId(10, 20, batch_index=3, partition=2, batch_size=5)
    data = message_id.to_proto(ack_set=[5])
    assert list(data.ack_set) == [5]
    back = MessageId.from_proto(data)
    assert back == message_id
    assert back.batch_size == 5


def test_ordering() -> None:
    ids = [MessageId(2, 0), MessageId(1, 5, 1), MessageId(1, 5), MessageId(1, 5, 0), EARLIEST]
    assert sorted(ids) == [EARLIEST, MessageId(1, 5), MessageId(1, 5, 0), MessageId(1, 5, 1),
                           MessageId(2, 0)]  # fmt: skip
    assert MessageId(2**40, 2**40) < LATEST
    assert MessageId(1, 1, batch_size=3) == MessageId(1, 1, batch_size=7)


def test_out_of_range_ids_rejected() -> None:
    with pytest.raises(InvalidMessageId):
        MessageId(2**63, 0)
    with pytest.raises(InvalidMessageId):
        MessageId(0, -(2**63) - 1)


def test_with_partition_and_entry() -> None:
    message_id = MessageId(1, 2, 3).with_partition(4)
    assert message_id.partition == 4
    assert message_id.entry == (1, 2)
    assert message_id.is_batch_index


def test_ack_set_layout_matches_bitset_to_long_array() -> None:
    assert ack_set_all_unacked(0) == []
    assert ack_set_all_unacked(3) == [0b111]
    assert ack_set_all_unacked(64) == [-1]  # bit 63 set makes the long negative
    assert ack_set_all_unacked(65) == [-1, 1]
    assert ack_set_from_bits(1 << 64) == [0, 1]
    assert ack_set_to_bits([-1, 1]) == (1 << 65) - 1


def test_acknowledge_clears_bits_and_trims_trailing_words() -> None:
    ack_set = ack_set_all_unacked(70)
    ack_set = ack_set_acknowledge(ack_set, *range(64, 70))
    assert ack_set == [-1]
    ack_set = ack_set_acknowledge(ack_set, 0, 63)
    assert not ack_set_is_unacked(ack_set, 0)
    assert not ack_set_is_unacked(ack_set, 63)
    assert ack_set_is_unacked(ack_set, 1)
    assert not ack_set_is_unacked(ack_set, 200)
    assert ack_set_unacked_count(ack_set) == 62
    assert ack_set_acknowledge(ack_set_all_unacked(3), 0, 1, 2) == []


def test_unacked_indexes_and_intersect() -> None:
    left = ack_set_acknowledge(ack_set_all_unacked(5), 1)
    right = ack_set_acknowledge(ack_set_all_unacked(5), 3)
    assert ack_set_unacked_indexes(left) == [0, 2, 3, 4]
    assert ack_set_unacked_indexes(ack_set_intersect(left, right)) == [0, 2, 4]


def test_cumulative_ack_set_clears_through_index() -> None:
    assert ack_set_unacked_indexes(ack_set_cumulative(5, 2)) == [3, 4]
    assert ack_set_cumulative(5, 4) == []


def test_bad_indexes() -> None:
    with pytest.raises(ValueError, match="negative"):
        ack_set_is_unacked([1], -1)
    with pytest.raises(ValueError, match="negative"):
        ack_set_from_bits(-1)
