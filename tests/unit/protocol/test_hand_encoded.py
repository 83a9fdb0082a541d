"""The hand-encoded SEND_RECEIPT, MESSAGE and SEND frames are byte-for-byte what protobuf
writes."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from magnetar.protocol import commands
from magnetar.protocol.frame import (
    FrameDecoder,
    encode_command,
    encode_message,
    encode_payload_command,
)
from magnetar.protocol.hand_encoded import (
    message_frame,
    message_frame_head,
    message_frames,
    plain_metadata,
    schema_version_field,
    send_frame,
    send_receipt_frame,
    send_receipt_frames,
    varint,
)
from magnetar.protocol.message_id import INT64_MAX, INT64_MIN, MessageId
from magnetar.wire import pulsar_api_pb2 as pb

U64 = st.integers(min_value=0, max_value=(1 << 64) - 1)
I64 = st.integers(min_value=INT64_MIN, max_value=INT64_MAX)


@settings(max_examples=300)
@given(producer_id=U64, sequence_id=U64, ledger_id=I64, entry_id=I64,
       highest=st.none() | U64)  # fmt: skip
def test_receipt_bytes_equal_protobuf(
    producer_id: int, sequence_id: int, ledger_id: int, entry_id: int, highest: int | None
) -> None:
    expected = encode_command(
        commands.send_receipt(
            producer_id, sequence_id, MessageId(ledger_id, entry_id), highest_sequence_id=highest
        )
    )
    assert send_receipt_frame(producer_id, sequence_id, ledger_id, entry_id, highest) == expected


@dataclass
class _Stored:
    """A stored SEND, as the producer's are read by the run encoder."""

    sequence_id: int
    highest_sequence_id: int | None
    message_id: MessageId | None


@settings(max_examples=300)
@given(producer_id=U64,
       sends=st.lists(st.tuples(U64, st.none() | U64, I64, I64), max_size=6))  # fmt: skip
@example(producer_id=0, sends=[(0, None, -1, 0)])  # ledger -1 first: not a "no ledger yet"
def test_a_run_of_receipts_equals_protobuf(
    producer_id: int, sends: list[tuple[int, int | None, int, int]]
) -> None:
    """The producer's run encoder writes each receipt as protobuf does, back to back, the
    ledger changing or not between SENDs."""
    # The last SEND's follower too: the same ledger twice in a row.
    sends += [(seq + 1 & (1 << 64) - 1, hi, ledger, entry) for seq, hi, ledger, entry in sends[-1:]]
    receipts = [
        commands.send_receipt(producer_id, seq, MessageId(ledger, entry), highest_sequence_id=hi)
        for seq, hi, ledger, entry in sends
    ]
    expected = b"".join(encode_command(receipt) for receipt in receipts)
    run = [_Stored(seq, hi, MessageId(ledger, entry)) for seq, hi, ledger, entry in sends]
    assert send_receipt_frames(producer_id, run) == expected


def test_a_receipt_run_refuses_a_send_not_stored() -> None:
    with pytest.raises(ValueError, match="SEND 5 was not stored"):
        send_receipt_frames(1, [_Stored(4, None, MessageId(1, 2)), _Stored(5, None, None)])


def test_receipt_decodes() -> None:
    decoder = FrameDecoder()
    decoder.feed(send_receipt_frame(7, 300, 12, -1, 301))
    (frame,) = list(decoder.frames())
    assert frame.command.type == pb.BaseCommand.SEND_RECEIPT
    receipt = frame.command.send_receipt
    assert (receipt.producer_id, receipt.sequence_id, receipt.highest_sequence_id) == (7, 300, 301)
    assert MessageId.from_proto(receipt.message_id) == MessageId(12, -1)


@given(U64)
@example(0x7F)
@example(0x80)
@example(0x3FFF)
@example(0x4000)
@example(0x1FFFFF)
@example(0x200000)
def test_varint_matches_protobuf(value: int) -> None:
    # CommandFlow{consumer_id = value, message_permits = 0} is 0x08 varint(value) 0x10 0x00.
    assert (
        varint(value)
        == pb.CommandFlow(consumer_id=value, message_permits=0).SerializeToString()[1:-2]
    )


@settings(max_examples=300)
@given(consumer_id=U64, ledger_id=I64, entry_id=I64,
       partition=st.integers(min_value=-1, max_value=(1 << 31) - 1),
       redelivery=st.integers(min_value=0, max_value=(1 << 32) - 1),
       ack_set=st.lists(I64, max_size=4), epoch=st.none() | U64,
       stored=st.binary(max_size=64))  # fmt: skip
def test_message_bytes_equal_protobuf(
    consumer_id: int,
    ledger_id: int,
    entry_id: int,
    partition: int,
    redelivery: int,
    ack_set: list[int],
    epoch: int | None,
    stored: bytes,
) -> None:
    command = commands.message(
        consumer_id,
        MessageId(ledger_id, entry_id, partition=partition),
        redelivery_count=redelivery,
        ack_set=ack_set,
        consumer_epoch=epoch,
    )
    expected = encode_message(command, stored)
    actual = message_frame(
        consumer_id,
        ledger_id,
        entry_id,
        partition,
        stored,
        redelivery_count=redelivery,
        ack_set=ack_set,
        consumer_epoch=epoch,
    )
    assert actual == expected
    # The head written before the stored bytes (the broker's dispatch: no joined frame).
    head = message_frame_head(
        consumer_id,
        ledger_id,
        entry_id,
        partition,
        len(stored),
        redelivery_count=redelivery,
        ack_set=ack_set,
        consumer_epoch=epoch,
    )
    assert head + stored == expected


@settings(max_examples=300)
@given(consumer_id=U64, partition=st.integers(min_value=-1, max_value=(1 << 31) - 1),
       epoch=st.none() | U64,
       entries=st.lists(st.tuples(I64, I64.filter(lambda e: e > INT64_MIN),
                               st.binary(max_size=16)), max_size=6))  # fmt: skip
@example(consumer_id=0, partition=0, epoch=None, entries=[(-1, 0, b"")])  # (as above)
def test_a_run_of_message_frames_equals_protobuf(
    consumer_id: int, partition: int, epoch: int | None, entries: list[tuple[int, int, bytes]]
) -> None:
    """The dispatcher's run encoder (what the run's frames share written once) writes each
    frame as protobuf does, the ledger changing or not between entries."""
    # The last entry's predecessor too: the same ledger twice in a row.
    entries += [(ledger, entry - 1, stored) for ledger, entry, stored in entries[-1:]]
    expected: list[bytes] = []
    for ledger_id, entry_id, stored in entries:
        command = commands.message(
            consumer_id, MessageId(ledger_id, entry_id, partition=partition), consumer_epoch=epoch
        )
        expected += (encode_message(command, stored)[: -len(stored) or None], stored)
    parts = message_frames(
        consumer_id,
        partition,
        epoch,
        [(ledger, entry) for ledger, entry, _ in entries],
        [s for _, _, s in entries],
    )
    assert parts == expected


@settings(max_examples=300)
@given(producer_id=U64, sequence_id=U64,
       batch=st.none() | st.tuples(st.integers(1, 2**31 - 1), U64), checksum=st.booleans(),
       payload=st.binary(max_size=300), name=st.text(max_size=20),
       schema_version=st.binary(max_size=8))  # fmt: skip
@example(producer_id=0, sequence_id=0, batch=None, checksum=True, payload=b"", name="",
         schema_version=b"")  # fmt: skip
def test_send_bytes_equal_protobuf(
    producer_id: int,
    sequence_id: int,
    batch: tuple[int, int] | None,
    checksum: bool,
    payload: bytes,
    name: str,
    schema_version: bytes,
) -> None:
    """A producer's SEND, single or a batch's, is the frame protobuf writes for it."""
    metadata = pb.MessageMetadata(producer_name=name, sequence_id=sequence_id, publish_time=1)
    if schema_version:
        metadata.schema_version = schema_version
    if batch is None:
        command = commands.send(producer_id, sequence_id)
        num_messages = highest = -1
    else:
        num_messages, highest = batch
        command = commands.send(
            producer_id, sequence_id, num_messages=num_messages, highest_sequence_id=highest
        )
    expected = encode_payload_command(command, metadata, payload, checksum=checksum)
    raw = metadata.SerializeToString()
    frame = send_frame(producer_id, sequence_id, num_messages, highest, raw, payload, checksum)
    assert frame == expected


@settings(max_examples=300)
@given(name=st.text(max_size=40), sequence_id=U64, publish_time=U64)
@example(name="", sequence_id=0, publish_time=0)
@example(name="producer-\u00e9\u4e2d", sequence_id=(1 << 64) - 1, publish_time=1 << 63)
def test_plain_metadata_bytes_equal_protobuf(
    name: str, sequence_id: int, publish_time: int
) -> None:
    """A plain message's metadata (what an unbatched send of a bare payload carries)."""
    expected = pb.MessageMetadata(
        producer_name=name, sequence_id=sequence_id, publish_time=publish_time
    ).SerializeToString()
    assert plain_metadata(name, sequence_id, publish_time) == expected


@settings(max_examples=100)
@given(name=st.text(max_size=20), sequence_id=U64, version=st.binary(min_size=1, max_size=300))
def test_a_schema_version_appended_to_plain_metadata_is_protobufs(
    name: str, sequence_id: int, version: bytes
) -> None:
    expected = pb.MessageMetadata(
        producer_name=name, sequence_id=sequence_id, publish_time=7, schema_version=version
    ).SerializeToString()
    assert plain_metadata(name, sequence_id, 7) + schema_version_field(version) == expected
