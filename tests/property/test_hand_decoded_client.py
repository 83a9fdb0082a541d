"""A client's one-pass scans of a SEND_RECEIPT and of a MESSAGE command agree with protobuf.

:func:`magnetar.protocol.hand_decoded.scan_receipt` reads a receipt straight from the wire:
the producer and sequence ids and where the entry was stored; :func:`scan_message` reads a
MESSAGE's command: the consumer, the entry, the redelivery count, the ack set and the epoch.
The client's frame decoder (:meth:`FrameDecoder.client_frames`) falls back to protobuf for
anything else. Every receipt and MESSAGE a broker writes must take the fast path and give what
protobuf gives; for changed or random bytes the client's reader must give what protobuf's
reading of the same frames gives, an error included.
"""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from magnetar.protocol.frame import (
    Frame,
    FrameDecoder,
    MessageFrame,
    encode_command,
    encode_payload_command,
    encode_payload_section,
)
from magnetar.protocol.hand_decoded import (
    Delivery,
    ReceiptFrame,
    delivery_of,
    scan_message,
    scan_receipt,
)
from magnetar.protocol.hand_encoded import message_frame, send_receipt_frame
from magnetar.protocol.message_id import INT64_MAX, INT64_MIN, to_signed64
from magnetar.wire import pulsar_api_pb2 as pb
from tests.kit.protobuf_wire import decoded, field, whole_frame

_UINT64 = st.integers(0, 2**64 - 1)
_INT64 = st.integers(INT64_MIN, INT64_MAX)
_RECEIPT = pb.BaseCommand.SEND_RECEIPT
_MESSAGE = pb.BaseCommand.MESSAGE


@st.composite
def receipts(draw: st.DrawFn) -> pb.BaseCommand:
    mid = pb.MessageIdData(ledger_id=draw(_UINT64), entry_id=draw(_UINT64))
    if draw(st.booleans()):
        mid.partition = draw(st.integers(-1, 2**31 - 1))
        mid.batch_index = draw(st.integers(-1, 2**31 - 1))
    receipt = pb.CommandSendReceipt(
        producer_id=draw(_UINT64), sequence_id=draw(_UINT64), message_id=mid
    )
    if draw(st.booleans()):
        receipt.highest_sequence_id = draw(_UINT64)
    return pb.BaseCommand(type=_RECEIPT, send_receipt=receipt)


def receipt_frame_of(command: pb.BaseCommand) -> ReceiptFrame | None:
    """What the scan must give for ``command`` (parsed by protobuf): None for a receipt it
    leaves to protobuf (no message id, or one with an ack set or a first chunk id)."""
    receipt = command.send_receipt
    mid = receipt.message_id
    if not receipt.HasField("message_id") or mid.ack_set or mid.HasField("first_chunk_message_id"):
        return None
    return ReceiptFrame(
        receipt.producer_id,
        receipt.sequence_id,
        to_signed64(mid.ledger_id),
        to_signed64(mid.entry_id),
    )


def _decoded(data: bytes, client: bool) -> list[object]:
    """Every frame (or the error that ended the decoding) of ``data``; a receipt the scan
    takes as its ReceiptFrame, and a MESSAGE as its Delivery and section, either way."""

    def normal(frame: object) -> object:
        if isinstance(frame, Frame) and frame.type == _RECEIPT:
            return receipt_frame_of(frame.command) or frame
        if isinstance(frame, Frame) and frame.type == _MESSAGE:
            return (delivery_of(frame.command.message), frame.payload)
        if isinstance(frame, MessageFrame):
            return (frame.delivery, frame.section)
        return frame

    return decoded(data, FrameDecoder.client_frames if client else FrameDecoder.frames, normal)


@settings(max_examples=400, deadline=None)
@given(receipts())
def test_the_scan_reads_what_protobuf_reads(command: pb.BaseCommand) -> None:
    raw = command.SerializeToString()
    scanned = scan_receipt(raw, 0)
    assert scanned is not None  # every receipt with a plain message id takes the fast path
    assert scanned == receipt_frame_of(command)
    assert _decoded(encode_command(command), True) == [scanned]


@settings(max_examples=200, deadline=None)
@given(producer_id=_UINT64, sequence_id=_UINT64, ledger_id=_INT64, entry_id=_INT64,
       highest=st.none() | _UINT64)  # fmt: skip
def test_what_the_broker_writes_takes_the_fast_path(
    producer_id: int, sequence_id: int, ledger_id: int, entry_id: int, highest: int | None
) -> None:
    frame = send_receipt_frame(producer_id, sequence_id, ledger_id, entry_id, highest)
    decoder = FrameDecoder()
    decoder.feed(frame)
    assert list(decoder.client_frames()) == [
        ReceiptFrame(producer_id, sequence_id, ledger_id, entry_id)
    ]


@settings(max_examples=600, deadline=None)
@given(
    receipts(),
    st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 255)), min_size=1, max_size=3),
)
def test_changed_bytes_give_what_protobuf_gives(
    command: pb.BaseCommand, changes: list[tuple[int, int]]
) -> None:
    frame = bytearray(encode_command(command))
    for at, value in changes:
        frame[8 + at % (len(frame) - 8)] = value  # the sizes stay: the frame stays one frame
    assert _decoded(bytes(frame), True) == _decoded(bytes(frame), False)


@settings(max_examples=600, deadline=None)
@given(st.binary(max_size=40))
@example(b"\x3a\x08\x08\x01\x10\x02\x1a\x02\x08\x01")  # an id without its entry id
def test_any_bytes_give_what_protobuf_gives(command: bytes) -> None:
    data = b"\x08\x07" + command
    scanned = scan_receipt(data, 0)
    if scanned is not None:
        assert scanned == receipt_frame_of(pb.BaseCommand.FromString(data))
    assert _decoded(whole_frame(data), True) == _decoded(whole_frame(data), False)


def _receipt(*fields: bytes) -> bytes:
    return field(1, _RECEIPT) + field(7, b"".join(fields))


_ID = field(3, field(1, 5) + field(2, 6))
_HEAD = field(1, 1) + field(2, 9)

# One defect each in an otherwise well-formed receipt: the scan steps aside, and the reader
# gives what protobuf gives (an error, or the Frame the client's protobuf path handles).
_STEPS_ASIDE = {
    "no message id": _receipt(_HEAD),
    "an id with an ack set": _receipt(_HEAD, field(3, field(1, 5) + field(2, 6) + field(5, 3))),
    "an id without its ledger id": _receipt(_HEAD, field(3, field(2, 6))),
    "an id without its entry id": _receipt(_HEAD, field(3, field(1, 5))),
    "no producer id": _receipt(field(2, 9), _ID),
    "no sequence id": _receipt(field(1, 1), _ID),
    "a sequence id length-delimited": _receipt(field(1, 1), field(2, b"\x09"), _ID),
    "an unknown receipt field": _receipt(_HEAD, _ID, field(9, 1)),
    # protobuf merges them: the first's entry id stays under the second's ledger id
    "a second, partial id": _receipt(_HEAD, _ID, field(3, field(1, 7))),
    "another command's body too": _receipt(_HEAD, _ID) + field(8, b""),
    "another type with a receipt body": field(1, pb.BaseCommand.PING) + field(7, _HEAD + _ID),
}


@pytest.mark.parametrize("case", sorted(_STEPS_ASIDE))
def test_the_scan_steps_aside_for_what_it_does_not_expect(case: str) -> None:
    command = _STEPS_ASIDE[case]
    assert scan_receipt(command, 0) is None
    assert _decoded(whole_frame(command), True) == _decoded(whole_frame(command), False)


def test_the_cases_it_steps_aside_for_are_well_formed_otherwise() -> None:
    """Without the defect the same bytes take the fast path; ids above INT64_MAX are signed;
    the last of a repeated id (whole) is the one protobuf keeps, as is the last scalar."""
    assert scan_receipt(_receipt(_HEAD, _ID), 0) == ReceiptFrame(1, 9, 5, 6)
    wide = _receipt(_HEAD, field(3, field(1, 2**64 - 1) + field(2, 2**63)), field(4, 3))
    assert scan_receipt(wide, 0) == ReceiptFrame(1, 9, -1, -(2**63))
    twice = _receipt(_HEAD, _ID, field(2, 10), field(3, field(1, 7) + field(2, 8)))
    assert scan_receipt(twice, 0) == ReceiptFrame(1, 10, 7, 8)
    assert receipt_frame_of(pb.BaseCommand.FromString(twice)) == ReceiptFrame(1, 10, 7, 8)


# ------------------------------------------------------------------ MESSAGE


@st.composite
def deliveries(draw: st.DrawFn) -> pb.BaseCommand:
    mid = pb.MessageIdData(ledger_id=draw(_UINT64), entry_id=draw(_UINT64))
    if draw(st.booleans()):
        mid.partition = draw(st.integers(-(2**31), 2**31 - 1))
    message = pb.CommandMessage(consumer_id=draw(_UINT64), message_id=mid)
    if draw(st.booleans()):
        message.redelivery_count = draw(st.integers(0, 2**32 - 1))
    message.ack_set.extend(draw(st.lists(_INT64, max_size=3)))
    if draw(st.booleans()):
        message.consumer_epoch = draw(_UINT64)
    return pb.BaseCommand(type=_MESSAGE, message=message)


_METADATA = pb.MessageMetadata(producer_name="p", sequence_id=1, publish_time=2)
_SECTION = encode_payload_section(_METADATA, b"body")


def _message(command: pb.BaseCommand, payload: bytes = b"body") -> bytes:
    return encode_payload_command(command, _METADATA, payload)


@settings(max_examples=400, deadline=None)
@given(deliveries())
def test_the_message_scan_reads_what_protobuf_reads(command: pb.BaseCommand) -> None:
    scanned = scan_message(command.SerializeToString())
    assert scanned is not None  # every MESSAGE with a plain entry id takes the fast path
    assert scanned == delivery_of(command.message)
    decoder = FrameDecoder()
    decoder.feed(_message(command))
    [frame] = list(decoder.client_frames())
    assert isinstance(frame, MessageFrame)
    assert frame.delivery == scanned
    assert (frame.section.metadata, frame.section.payload) == (_METADATA, b"body")


@settings(max_examples=200, deadline=None)
@given(consumer_id=_UINT64, ledger_id=_INT64, entry_id=_INT64,
       partition=st.integers(-1, 2**31 - 1), redeliveries=st.integers(0, 100),
       ack_set=st.none() | st.lists(_INT64, min_size=1, max_size=3),
       epoch=st.none() | _UINT64)  # fmt: skip
def test_what_the_broker_writes_takes_the_message_fast_path(
    consumer_id: int,
    ledger_id: int,
    entry_id: int,
    partition: int,
    redeliveries: int,
    ack_set: list[int] | None,
    epoch: int | None,
) -> None:
    frame = message_frame(consumer_id, ledger_id, entry_id, partition, _SECTION,
                          redelivery_count=redeliveries, ack_set=ack_set,
                          consumer_epoch=epoch)  # fmt: skip
    decoder = FrameDecoder()
    decoder.feed(frame)
    [got] = list(decoder.client_frames())
    assert isinstance(got, MessageFrame)
    expected = Delivery(consumer_id, ledger_id, entry_id, partition, redeliveries,
                        ack_set or [], -1 if epoch is None else epoch)  # fmt: skip
    assert got.delivery == expected


@settings(max_examples=600, deadline=None)
@given(
    deliveries(),
    st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 255)), min_size=1, max_size=3),
)
def test_changed_message_bytes_give_what_protobuf_gives(
    command: pb.BaseCommand, changes: list[tuple[int, int]]
) -> None:
    frame = bytearray(_message(command))
    command_end = 8 + int.from_bytes(frame[4:8], "big")
    for at, value in changes:  # within the command: the sizes stay, the frame stays one
        frame[8 + at % (command_end - 8)] = value
    assert _decoded(bytes(frame), True) == _decoded(bytes(frame), False)


def _delivery(*fields: bytes) -> bytes:
    return field(1, _MESSAGE) + field(9, b"".join(fields))


_ENTRY = field(2, field(1, 5) + field(2, 6))

_MESSAGE_STEPS_ASIDE = {
    "an id with a batch index": _delivery(
        field(1, 1), field(2, field(1, 5) + field(2, 6) + field(4, 0))
    ),
    "an id without its entry id": _delivery(field(1, 1), field(2, field(1, 5))),
    "an id without its ledger id": _delivery(field(1, 1), field(2, field(2, 6))),
    "two ids (protobuf merges them)": _delivery(
        field(1, 1), _ENTRY, field(2, field(3, 4) + field(1, 5) + field(2, 7))
    ),
    "no message id": _delivery(field(1, 1)),
    "no consumer id": _delivery(_ENTRY),
    "a packed ack set": _delivery(field(1, 1), _ENTRY, field(4, b"\x01\x02")),
    "an unknown field": _delivery(field(1, 1), _ENTRY, field(9, 1)),
    "another type with a message body": field(1, pb.BaseCommand.PING)
    + field(9, field(1, 1) + _ENTRY),
}


@pytest.mark.parametrize("case", sorted(_MESSAGE_STEPS_ASIDE))
def test_the_message_scan_steps_aside_for_what_it_does_not_expect(case: str) -> None:
    command = _MESSAGE_STEPS_ASIDE[case]
    assert scan_message(command) is None
    whole = whole_frame(command, _SECTION)
    assert _decoded(whole, True) == _decoded(whole, False)


def test_the_message_cases_it_steps_aside_for_are_well_formed_otherwise() -> None:
    """Without the defect the same bytes take the fast path; ids above INT64_MAX are signed,
    ack set words are int64, a redelivery count is the low 32 bits of its varint."""
    assert scan_message(_delivery(field(1, 1), _ENTRY)) == Delivery(1, 5, 6, -1, 0, [], -1)
    wide = _delivery(
        field(1, 1),
        field(2, field(1, 2**64 - 1) + field(2, 2**63) + field(3, 2**64 - 1)),
        field(3, 2**32 + 3),
        field(4, 2**64 - 1),
        field(5, 9),
    )
    assert scan_message(wide) == Delivery(1, -1, -(2**63), -1, 3, [-1], 9)
    assert delivery_of(pb.BaseCommand.FromString(wide).message) == scan_message(wide)
