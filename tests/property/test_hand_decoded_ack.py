"""The broker's one-pass scan of an ACK agrees with protobuf.

:func:`magnetar.protocol.hand_decoded.scan_ack` reads an ACK of whole entries straight from
the wire: the consumer id, the ack type, the request id and each id's (ledger, entry) pair.
The frame decoder falls back to protobuf for anything else. Every such ACK a client writes
must take the fast path and give what protobuf gives; for changed or random bytes the broker's
reader must give what protobuf's reading of the same frames gives, an error included.
"""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from magnetar.protocol.frame import Frame, FrameDecoder, encode_command
from magnetar.protocol.hand_decoded import AckFrame, scan_ack
from magnetar.protocol.message_id import to_signed64
from magnetar.wire import pulsar_api_pb2 as pb
from tests.kit.protobuf_wire import decoded, field, whole_frame

_UINT64 = st.integers(0, 2**64 - 1)
_INT32 = st.integers(-(2**31), 2**31 - 1)


@st.composite
def message_ids(draw: st.DrawFn) -> pb.MessageIdData:
    m = pb.MessageIdData(ledger_id=draw(_UINT64), entry_id=draw(_UINT64))
    if draw(st.booleans()):
        m.partition = draw(_INT32)
        m.batch_index = draw(_INT32)
        m.batch_size = draw(_INT32)
    return m


@st.composite
def acks(draw: st.DrawFn) -> pb.BaseCommand:
    ack = pb.CommandAck(
        consumer_id=draw(_UINT64),
        ack_type=draw(st.sampled_from([pb.CommandAck.Individual, pb.CommandAck.Cumulative])),
    )
    ack.message_id.extend(draw(st.lists(message_ids(), max_size=5)))
    if draw(st.booleans()):
        ack.request_id = draw(_UINT64)
    if draw(st.booleans()):
        ack.validation_error = draw(st.sampled_from(pb.CommandAck.ValidationError.values()))
        ack.txnid_least_bits = draw(_UINT64)
        ack.txnid_most_bits = draw(_UINT64)
    return pb.BaseCommand(type=pb.BaseCommand.ACK, ack=ack)


def ack_frame_of(command: pb.BaseCommand) -> AckFrame | None:
    """What the scan must give for ``command`` (parsed by protobuf): None for an ACK it
    leaves to protobuf (an id with an ack set or a first chunk id, or properties)."""
    ack = command.ack
    if ack.properties or any(
        m.ack_set or m.HasField("first_chunk_message_id") for m in ack.message_id
    ):
        return None
    return AckFrame(
        ack.consumer_id,
        ack.ack_type == pb.CommandAck.Cumulative,
        ack.request_id if ack.HasField("request_id") else None,
        [(to_signed64(m.ledger_id), to_signed64(m.entry_id)) for m in ack.message_id],
    )


def _decoded(data: bytes, broker: bool) -> list[object]:
    """Every frame (or the error that ended the decoding) of ``data``; an ACK the scan takes
    as its AckFrame, either way."""

    def normal(frame: object) -> object:
        if isinstance(frame, Frame) and frame.type == pb.BaseCommand.ACK:
            return ack_frame_of(frame.command) or frame
        return frame

    return decoded(data, FrameDecoder.broker_frames if broker else FrameDecoder.frames, normal)


@settings(max_examples=400, deadline=None)
@given(acks())
def test_the_scan_reads_what_protobuf_reads(command: pb.BaseCommand) -> None:
    raw = command.SerializeToString()
    scanned = scan_ack(raw, 0)
    assert scanned is not None  # every ACK of whole entries takes the fast path
    assert scanned == ack_frame_of(command)
    assert _decoded(encode_command(command), True) == [scanned]


@settings(max_examples=600, deadline=None)
@given(
    acks(), st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 255)), min_size=1, max_size=3)
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
@example(b"\x08\x0a\x52\x04\x08\x01\x10\x00")
@example(b"\x08\x0a\x52\x08\x08\x01\x10\x00\x1a\x02\x08\x01")  # an id without its entry id
def test_any_bytes_give_what_protobuf_gives(command: bytes) -> None:
    data = b"\x08\x0a" + command
    scanned = scan_ack(data, 0)
    if scanned is not None:
        assert scanned == ack_frame_of(pb.BaseCommand.FromString(data))
    assert _decoded(whole_frame(data), True) == _decoded(whole_frame(data), False)


def _ack(*fields: bytes) -> bytes:
    return field(1, pb.BaseCommand.ACK) + field(10, b"".join(fields))


_ID = field(3, field(1, 5) + field(2, 6))
_HEAD = field(1, 1) + field(2, 0)

# One defect each in an otherwise well-formed ACK: the scan steps aside, and the reader gives
# what protobuf gives (an error, or the Frame the broker's protobuf path handles).
_STEPS_ASIDE = {
    "an id with an ack set": _ack(_HEAD, field(3, field(1, 5) + field(2, 6) + field(5, 3))),
    "an id with a first chunk id": _ack(
        _HEAD, field(3, field(1, 5) + field(2, 6) + field(7, field(1, 1) + field(2, 2)))
    ),
    "properties": _ack(_HEAD, _ID, field(5, field(1, b"k") + field(2, 1))),
    "an unknown ack type": _ack(field(1, 1), field(2, 5), _ID),
    "no ack type": _ack(field(1, 1), _ID),
    "no consumer id": _ack(field(2, 0), _ID),
    "an id without its ledger id": _ack(_HEAD, field(3, field(2, 6))),
    "an id without its entry id": _ack(_HEAD, field(3, field(1, 5))),
    "an entry id length-delimited": _ack(_HEAD, field(3, field(1, 5) + field(2, b"\x06"))),
    "a consumer id length-delimited": _ack(field(1, b"\x01"), field(2, 0), _ID),
    "an unknown ack field": _ack(_HEAD, _ID, field(9, 1)),
    "an unknown id field": _ack(_HEAD, field(3, field(1, 5) + field(2, 6) + field(8, 1))),
    # protobuf merges them: the first's request id stays and the ids add up
    "two ack bodies": _ack(_HEAD, _ID, field(8, 9)) + field(10, _HEAD + _ID),
    "another command's body too": _ack(_HEAD, _ID) + field(11, b""),
    "another type with an ack body": field(1, pb.BaseCommand.FLOW) + field(10, _HEAD + _ID),
}


@pytest.mark.parametrize("case", sorted(_STEPS_ASIDE))
def test_the_scan_steps_aside_for_what_it_does_not_expect(case: str) -> None:
    command = _STEPS_ASIDE[case]
    assert scan_ack(command, 0) is None
    assert _decoded(whole_frame(command), True) == _decoded(whole_frame(command), False)


def test_the_cases_it_steps_aside_for_are_well_formed_otherwise() -> None:
    """Without the defect the same bytes take the fast path; ids above INT64_MAX are signed."""
    assert scan_ack(_ack(_HEAD, _ID), 0) == AckFrame(1, False, None, [(5, 6)])
    wide = _ack(
        field(1, 1), field(2, 1), field(3, field(1, 2**64 - 1) + field(2, 2**63)), field(8, 9)
    )
    assert scan_ack(wide, 0) == AckFrame(1, True, 9, [(-1, -(2**63))])
