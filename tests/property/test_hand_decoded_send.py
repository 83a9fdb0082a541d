"""The broker's one-pass scan of a SEND agrees with protobuf.

:func:`magnetar.protocol.hand_decoded.scan_send` reads the fields the publish path needs straight
from a SEND's command and payload section; the frame decoder falls back to protobuf when it
meets anything it does not expect. For every SEND a client can write, the scan must take the
fast path and give what protobuf gives; for any other bytes (random, truncated, flipped) it
must either give what protobuf gives or step aside, and the decoder must then raise what
:meth:`FrameDecoder.frames` raises.
"""

from __future__ import annotations

import itertools
import os
import struct

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from magnetar.broker.entry import entry_info
from magnetar.checksum import COMBINE_FROM
from magnetar.protocol.errors import ChecksumMismatch
from magnetar.protocol.frame import (
    Frame,
    FrameDecoder,
    crc32c,
    encode_command,
    encode_payload_section,
    parse_split_frame,
    send_frame_of,
)
from magnetar.protocol.hand_decoded import SendFrame, scan_send
from magnetar.wire import pulsar_api_pb2 as pb
from tests.kit.protobuf_wire import decoded, field, whole_frame
from tests.kit.pulsar_strategies import message_metadata

_INT32 = st.integers(-(2**31), 2**31 - 1)
_UINT64 = st.integers(0, 2**64 - 1)


@st.composite
def sends(draw: st.DrawFn) -> pb.BaseCommand:
    send = pb.CommandSend(producer_id=draw(_UINT64), sequence_id=draw(_UINT64))
    if draw(st.booleans()):
        send.num_messages = draw(_INT32)
    if draw(st.booleans()):
        send.highest_sequence_id = draw(_UINT64)
    if draw(st.booleans()):
        send.txnid_least_bits = draw(_UINT64)
        send.txnid_most_bits = draw(_UINT64)
    if draw(st.booleans()):
        send.is_chunk = draw(st.booleans())
        send.marker = draw(st.booleans())
    return pb.BaseCommand(type=pb.BaseCommand.SEND, send=send)


def _decoded(data: bytes, sends: bool) -> list[object]:
    """Every frame (or the error that ended the decoding) of ``data``; SENDs as SendFrames."""

    def normal(frame: object) -> object:
        if not sends and isinstance(frame, Frame) and frame.type == pb.BaseCommand.SEND:
            return send_frame_of(frame)
        return frame

    return decoded(data, FrameDecoder.broker_frames if sends else FrameDecoder.frames, normal)


@settings(max_examples=400, deadline=None)
@given(sends(), message_metadata(), st.binary(max_size=16), st.booleans())
def test_the_scan_reads_what_protobuf_reads(
    command: pb.BaseCommand, m: pb.MessageMetadata, payload: bytes, checksum: bool
) -> None:
    cmd = command.SerializeToString()
    section = encode_payload_section(m, payload, checksum=checksum)
    scanned = scan_send(cmd, section, True)
    assert scanned is not None  # every SEND a client writes takes the fast path
    assert scanned == send_frame_of(parse_split_frame(cmd, section))
    assert scanned.metadata == m
    assert _decoded(whole_frame(cmd, section), True) == [scanned]


@settings(max_examples=400, deadline=None)
@given(sends(), message_metadata(), st.booleans(), st.binary(max_size=16), st.booleans())
@example(  # a partition key and no ordering key; a batch of one counts as one
    pb.BaseCommand(type=pb.BaseCommand.SEND, send=pb.CommandSend(producer_id=1, sequence_id=2)),
    pb.MessageMetadata(
        producer_name="p", sequence_id=1, publish_time=5, partition_key="k", num_messages_in_batch=1
    ),
    False,
    b"x",
    True,
)
@example(  # a key that is not ASCII: left to the dispatcher's own read
    pb.BaseCommand(type=pb.BaseCommand.SEND, send=pb.CommandSend(producer_id=1, sequence_id=2)),
    pb.MessageMetadata(producer_name="p", sequence_id=1, publish_time=5, partition_key="é"),
    False,
    b"x",
    True,
)
def test_the_scan_s_facts_are_what_the_dispatcher_reads(
    command: pb.BaseCommand,
    m: pb.MessageMetadata,
    ordering: bool,
    payload: bytes,
    checksum: bool,
) -> None:
    """The facts a SEND's scan hands on (kept with the cached entry, so a dispatch does not
    read the metadata again) are what the dispatcher's own read of the stored entry gives;
    a chunk, or names and a partition key that are not ASCII, leave them to that read."""
    if not ordering:
        m.ClearField("ordering_key")
    cmd = command.SerializeToString()
    section = encode_payload_section(m, payload, checksum=checksum)
    scanned = scan_send(cmd, section, True)
    assert scanned is not None
    ascii_names = m.producer_name.isascii() and m.uuid.isascii() and m.partition_key.isascii()
    if scanned.chunk is not None or not ascii_names:
        assert scanned.facts is None
        return
    info = entry_info(section)
    assert scanned.facts == (info.messages, info.key, info.deliver_at)
    assert info.chunk is None


@settings(max_examples=600, deadline=None)
@given(
    sends(),
    message_metadata(),
    st.booleans(),
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=3),
)
@example(
    pb.BaseCommand(type=pb.BaseCommand.SEND, send=pb.CommandSend(producer_id=1, sequence_id=2)),
    pb.MessageMetadata(producer_name="p", sequence_id=1, publish_time=5),
    True,
    [(30, 0)],
)
def test_changed_bytes_give_what_protobuf_gives(
    command: pb.BaseCommand,
    m: pb.MessageMetadata,
    checksum: bool,
    changes: list[tuple[int, int]],
) -> None:
    cmd = command.SerializeToString()
    frame = bytearray(whole_frame(cmd, encode_payload_section(m, b"payload", checksum=checksum)))
    for at, value in changes:
        frame[8 + at % (len(frame) - 8)] = value  # the sizes stay: the frame stays one frame
    assert _decoded(bytes(frame), True) == _decoded(bytes(frame), False)


@pytest.mark.parametrize("size", [16_384 - 200, 16_384, 200_000])
def test_a_long_section_s_checksum_is_checked_like_a_short_one_s(size: int) -> None:
    """From 16 KiB on the scan checksums the section through a view, not a copy: a good one
    passes, and a changed byte anywhere it covers is refused as protobuf's path refuses it."""
    command = pb.BaseCommand(
        type=pb.BaseCommand.SEND, send=pb.CommandSend(producer_id=1, sequence_id=2)
    )
    m = pb.MessageMetadata(producer_name="p", sequence_id=2, publish_time=5)
    cmd = command.SerializeToString()
    section = encode_payload_section(m, os.urandom(size))
    assert scan_send(cmd, section, True) is not None  # the scan took it (no step aside)
    good = whole_frame(cmd, section)
    for at in (len(section) - size - 1, len(section) - size // 2, len(section) - 1):
        changed = bytearray(section)
        changed[at] ^= 0x40
        assert scan_send(cmd, bytes(changed), True) is None  # left to protobuf's path,
        bad = bytearray(good)
        bad[len(good) - len(section) + at] ^= 0x40
        (refused,) = _decoded(bytes(bad), True)
        assert refused[0] is ChecksumMismatch  # type: ignore[index]  # which refuses it


@pytest.mark.parametrize("size", [COMBINE_FROM - 200, COMBINE_FROM, 200_000])
def test_a_checked_long_section_carries_its_stored_crc(size: int) -> None:
    """From COMBINE_FROM on, a SEND whose checksum the scan checked carries crc32c of what the
    broker stores (combined from that checksum); not when the check is off, nor without a
    checksum, nor below COMBINE_FROM."""
    command = pb.BaseCommand(
        type=pb.BaseCommand.SEND, send=pb.CommandSend(producer_id=1, sequence_id=2)
    )
    m = pb.MessageMetadata(producer_name="p", sequence_id=2, publish_time=5)
    cmd = command.SerializeToString()
    body = os.urandom(size)
    section = encode_payload_section(m, body)
    checked = scan_send(cmd, section, True)
    assert checked is not None
    assert checked.stored == section
    long_enough = len(section) >= COMBINE_FROM
    assert checked.stored_crc == (crc32c(section) if long_enough else -1)
    unchecked = scan_send(cmd, section, False)
    assert unchecked is not None
    assert unchecked.stored_crc == -1
    bare = scan_send(cmd, encode_payload_section(m, body, checksum=False), True)
    assert bare is not None
    assert bare.stored_crc == -1


@settings(max_examples=600, deadline=None)
@given(st.binary(max_size=24), st.binary(max_size=48), st.booleans())
@example(b"\x08\x06\x32\x04\x08\x01\x10\x02", b"\x00\x00\x00\x02\x00\x01", False)  # field 0
@example(b"\x08\x06\x32\x04\x08\x01\x10\x02", b"\x00\x00\x00\x02\x0b\x00", False)  # a group
@example(b"\x08\x06\x32\x02\x08\x01", b"\x00\x00\x00\x00", False)  # no sequence id
@example(b"\x08\x06\x32\x04\x08\x01\x10\x02\x32\x00", b"\x00\x00\x00\x00", False)  # two bodies
def test_any_bytes_give_what_protobuf_gives(command: bytes, section: bytes, crc: bool) -> None:
    if crc:
        section = b"\x0e\x01\0\0\0\0" + section
    scanned = scan_send(command, section, False)
    if scanned is not None:
        assert scanned == send_frame_of(parse_split_frame(command, section, verify_checksum=False))
    if section:
        assert _decoded(whole_frame(command, section), True) == _decoded(
            whole_frame(command, section), False
        )


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(sends(), message_metadata(), st.integers(0, 20_000), st.booleans()),
        min_size=1,
        max_size=4,
    ),
    st.lists(st.integers(0, 100_000), max_size=12),
    st.lists(st.booleans(), min_size=13, max_size=13),
)
def test_sends_cut_across_reads_give_what_one_read_gives(
    frames: list[tuple[pb.BaseCommand, pb.MessageMetadata, int, bool]],
    cuts: list[int],
    take: list[bool],
) -> None:
    """SENDs (and a PING after each) fed in arbitrary pieces, the frames taken only now and
    then: a SEND longer than the reads is collected from them and its section joined once;
    the broker's frames are those of the whole stream fed at once, stored bytes included."""
    stream = b"".join(
        whole_frame(command.SerializeToString(), encode_payload_section(m, b"p" * size, checksum=c))
        + encode_command(pb.BaseCommand(type=pb.BaseCommand.PING, ping=pb.CommandPing()))
        for command, m, size, c in frames
    )
    points = sorted({0, len(stream), *(cut % (len(stream) + 1) for cut in cuts)})
    decoder = FrameDecoder()
    got: list[object] = []
    for (a, b), take_now in zip(itertools.pairwise(points), take, strict=False):
        decoder.feed(stream[a:b])
        assert decoder.buffered <= b
        if take_now:
            got.extend(decoder.broker_frames())
    got.extend(decoder.broker_frames())
    assert decoder.buffered == 0
    assert got == _decoded(stream, True)
    assert len(got) == 2 * len(frames)


def test_a_send_frame_is_built_for_every_send_even_off_the_fast_path() -> None:
    """A SEND the scan steps aside for (a message id in the command) still reaches the
    broker as a SendFrame, read by protobuf."""
    command = pb.BaseCommand(
        type=pb.BaseCommand.SEND,
        send=pb.CommandSend(
            producer_id=3, sequence_id=9, message_id=pb.MessageIdData(ledger_id=1, entry_id=2)
        ),
    ).SerializeToString()
    m = pb.MessageMetadata(producer_name="p", sequence_id=9, publish_time=5)
    section = encode_payload_section(m, b"x")
    assert scan_send(command, section, True) is None
    (frame,) = _decoded(whole_frame(command, section), True)
    assert isinstance(frame, SendFrame)
    assert (frame.producer_id, frame.sequence_id, frame.stored) == (3, 9, section)


_NAME, _SEQUENCE, _TIME = field(1, b"p"), field(2, 7), field(3, 5)
_SEND = field(1, pb.BaseCommand.SEND) + field(6, field(1, 1) + field(2, 7))


def _section(meta: bytes) -> bytes:
    return struct.pack(">I", len(meta)) + meta + b"payload"


# One defect each in an otherwise well-formed SEND: the scan steps aside, and the decoder gives
# what protobuf gives (an error or, where protobuf accepts the bytes, the same SendFrame).
_STEPS_ASIDE = {
    "no producer name": (_SEND, _section(_SEQUENCE + _TIME)),
    "no sequence id": (_SEND, _section(_NAME + _TIME)),
    "no publish time": (_SEND, _section(_NAME + _SEQUENCE)),
    "a property without its value": (
        _SEND,
        _section(_NAME + _SEQUENCE + _TIME + field(4, field(1, b"k"))),
    ),
    "a property with a third field": (
        _SEND,
        _section(
            _NAME + _SEQUENCE + _TIME + field(4, field(1, b"k") + field(2, b"v") + field(3, b"x"))
        ),
    ),
    "encryption keys": (
        _SEND,
        _section(_NAME + _SEQUENCE + _TIME + field(13, field(1, b"k") + field(2, b"v"))),
    ),
    "encryption keys without a value": (
        _SEND,
        _section(_NAME + _SEQUENCE + _TIME + field(13, field(1, b"k"))),
    ),
    "the retired field 10": (_SEND, _section(_NAME + _SEQUENCE + _TIME + field(10, 1))),
    "a field past the last": (_SEND, _section(_NAME + _SEQUENCE + _TIME + field(31, 1))),
    "num_chunks_from_msg length-delimited": (
        _SEND,
        _section(_NAME + _SEQUENCE + _TIME + field(27, b"\x05")),
    ),
    "producer name as a varint": (_SEND, _section(field(1, 3) + _SEQUENCE + _TIME)),
    "a varint past 64 bits": (_SEND, _section(_NAME + b"\x10" + b"\xff" * 9 + b"\x7f" + _TIME)),
    "a tenth varint byte with a bit past 64": (  # protobuf drops that bit
        _SEND,
        _section(_NAME + b"\x10" + b"\xff" * 9 + b"\x03" + _TIME),
    ),
    "a send id's tenth varint byte with a bit past 64": (
        field(1, pb.BaseCommand.SEND) + field(6, field(1, 1) + b"\x10" + b"\xff" * 9 + b"\x03"),
        _section(_NAME + _SEQUENCE + _TIME),
    ),
    "a bad checksum": (_SEND, b"\x0e\x01\0\0\0\1" + _section(_NAME + _SEQUENCE + _TIME)),
    "broker entry metadata": (
        _SEND,
        b"\x0e\x02" + struct.pack(">I", 2) + field(1, 4) + _section(_NAME + _SEQUENCE + _TIME),
    ),
    "a producer id length-delimited": (
        field(1, pb.BaseCommand.SEND) + field(6, field(1, b"\x01") + field(2, 7)),
        _section(_NAME + _SEQUENCE + _TIME),
    ),
    "a send field past the last": (
        field(1, pb.BaseCommand.SEND) + field(6, field(1, 1) + field(2, 7) + field(10, 1)),
        _section(_NAME + _SEQUENCE + _TIME),
    ),
    "two send bodies": (  # protobuf merges them: the highest id of the first stays
        field(1, pb.BaseCommand.SEND)
        + field(6, field(1, 1) + field(2, 7) + field(6, 9))
        + field(6, field(1, 1) + field(2, 8)),
        _section(_NAME + _SEQUENCE + _TIME),
    ),
    "a send without its sequence id": (
        field(1, pb.BaseCommand.SEND) + field(6, field(1, 1)),
        _section(_NAME + _SEQUENCE + _TIME),
    ),
    "another type with a send body": (
        field(1, pb.BaseCommand.MESSAGE) + field(6, field(1, 1) + field(2, 7)),
        _section(_NAME + _SEQUENCE + _TIME),
    ),
    "another command's body too": (_SEND + field(7, b""), _section(_NAME + _SEQUENCE + _TIME)),
    "no type": (field(6, field(1, 1) + field(2, 7)), _section(_NAME + _SEQUENCE + _TIME)),
}


@pytest.mark.parametrize("case", sorted(_STEPS_ASIDE))
def test_the_scan_steps_aside_for_what_it_does_not_expect(case: str) -> None:
    command, section = _STEPS_ASIDE[case]
    assert scan_send(command, section, True) is None
    frame = whole_frame(command, section)
    assert _decoded(frame, True) == _decoded(frame, False)


def test_the_cases_it_steps_aside_for_are_well_formed_otherwise() -> None:
    """The near misses above are near: without the defect the same bytes take the fast path."""
    plain = _section(_NAME + _SEQUENCE + _TIME)
    with_property = _section(_NAME + _SEQUENCE + _TIME + field(4, field(1, b"k") + field(2, b"v")))
    for section in (plain, with_property, b"\x0e\x01" + struct.pack(">I", crc32c(plain)) + plain):
        assert scan_send(_SEND, section, True) == send_frame_of(parse_split_frame(_SEND, section))
