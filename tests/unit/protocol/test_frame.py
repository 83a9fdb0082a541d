"""Frame codec: byte layout, CRC32-C, and the typed error for each kind of bad input."""

from __future__ import annotations

import struct

import pytest

from magnetar.protocol import commands
from magnetar.protocol.errors import (
    BrokenStream,
    ChecksumMismatch,
    FrameTooLarge,
    MalformedCommand,
    MalformedFrame,
    MalformedMetadata,
    TruncatedFrame,
    UnknownCommand,
)
from magnetar.protocol.frame import (
    DEFAULT_MAX_FRAME_SIZE,
    Frame,
    FrameDecoder,
    crc32c,
    encode_command,
    encode_message,
    encode_payload_command,
    encode_payload_section,
    strip_checksum,
)
from magnetar.protocol.message_id import MessageId
from magnetar.wire import pulsar_api_pb2 as pb

T = pb.BaseCommand


def metadata(seq: int = 1) -> pb.MessageMetadata:
    return pb.MessageMetadata(producer_name="p-1", sequence_id=seq, publish_time=1_700_000_000_000)


def decode_all(data: bytes, **kwargs: int) -> list[Frame]:
    decoder = FrameDecoder(**kwargs)  # type: ignore[arg-type]
    decoder.feed(data)
    frames = list(decoder.frames())
    decoder.eof()
    return frames


def raw_frame(command_bytes: bytes, rest: bytes = b"") -> bytes:
    body = struct.pack(">I", len(command_bytes)) + command_bytes + rest
    return struct.pack(">I", len(body)) + body


# ------------------------------------------------------------------ CRC32-C


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", 0x00000000),
        (b"123456789", 0xE3069283),  # the standard check value
        (bytes(32), 0x8A9136AA),  # RFC 3720 B.4 vectors
        (b"\xff" * 32, 0x62A8AB43),
        (bytes(range(32)), 0x46DD794E),
        (bytes(range(31, -1, -1)), 0x113FDB5C),
    ],
)
def test_crc32c_known_vectors(data: bytes, expected: int) -> None:
    assert crc32c(data) == expected


def test_crc32c_continues() -> None:
    assert crc32c(b"56789", crc32c(b"1234")) == crc32c(b"123456789")


# ------------------------------------------------------------------ layout


def test_simple_frame_layout() -> None:
    frame = encode_command(commands.ping())
    # type=PING (field 1 varint 18), then field 18 (ping) as an empty message.
    assert frame == b"\x00\x00\x00\x09\x00\x00\x00\x05\x08\x12\x92\x01\x00"


def test_payload_frame_layout_and_checksum_coverage() -> None:
    cmd = commands.send(7, 1)
    meta = metadata()
    frame = encode_payload_command(cmd, meta, b"payload")
    cmd_bytes = cmd.SerializeToString()
    meta_bytes = meta.SerializeToString()
    covered = struct.pack(">I", len(meta_bytes)) + meta_bytes + b"payload"
    expected_body = (
        struct.pack(">I", len(cmd_bytes))
        + cmd_bytes
        + b"\x0e\x01"
        + struct.pack(">I", crc32c(covered))
        + covered
    )
    assert frame == struct.pack(">I", len(expected_body)) + expected_body


def test_send_round_trip_keeps_stored_bytes() -> None:
    (frame,) = decode_all(encode_payload_command(commands.send(7, 3), metadata(3), b"hi"))
    assert frame.type == T.SEND
    assert frame.command.send.producer_id == 7
    assert frame.payload is not None
    assert frame.payload.payload == b"hi"
    assert frame.payload.metadata == metadata(3)
    assert frame.payload.stored == encode_payload_section(metadata(3), b"hi")
    assert frame.payload.broker_entry_metadata is None


def test_message_replays_stored_bytes_with_broker_entry_metadata() -> None:
    stored = encode_payload_section(metadata(), b"data")
    bem = pb.BrokerEntryMetadata(broker_timestamp=123, index=9)
    cmd = commands.message(5, MessageId(1, 2), redelivery_count=2)
    (frame,) = decode_all(encode_message(cmd, stored, broker_entry_metadata=bem))
    assert frame.command == cmd
    assert frame.payload is not None
    assert frame.payload.broker_entry_metadata == bem
    assert frame.payload.stored == stored  # the 0x0e02 block is not part of the entry
    assert frame.payload.payload == b"data"


def test_payload_without_checksum() -> None:
    data = encode_payload_command(commands.send(1, 1), metadata(), b"x", checksum=False)
    (frame,) = decode_all(data)
    assert frame.payload is not None
    assert frame.payload.checksum is None
    assert frame.payload.payload == b"x"
    assert strip_checksum(encode_payload_section(metadata(), b"x")) == frame.payload.stored


def test_empty_payload() -> None:
    (frame,) = decode_all(encode_payload_command(commands.send(1, 1), metadata(), b""))
    assert frame.payload is not None
    assert frame.payload.payload == b""


def test_frames_split_byte_by_byte() -> None:
    frames = [
        encode_command(commands.ping()),
        encode_payload_command(commands.send(1, 1), metadata(), b"abc"),
        encode_command(commands.partitioned_metadata_response(3, 4)),
    ]
    decoder = FrameDecoder()
    got: list[Frame] = []
    for byte in b"".join(frames):
        decoder.feed(bytes([byte]))
        got.extend(decoder.frames())
    assert [f.type for f in got] == [T.PING, T.SEND, T.PARTITIONED_METADATA_RESPONSE]
    assert decoder.buffered == 0
    decoder.eof()


def test_a_large_frame_over_many_feeds_then_the_next_frame() -> None:
    """A frame longer than each read is collected until whole (bytearray and memoryview feeds
    too), and the frame after it, in the same last read, comes out with it."""
    payload = bytes(range(256)) * 4096  # 1 MiB
    big = encode_payload_command(commands.send(3, 7), metadata(7), payload)
    stream = big + encode_command(commands.ping())
    decoder = FrameDecoder()
    got: list[Frame] = []
    pieces = [stream[i : i + 65536] for i in range(0, len(stream), 65536)]
    for n, piece in enumerate(pieces):
        decoder.feed(memoryview(piece) if n % 2 else bytearray(piece))
        got.extend(decoder.frames())
        if n < len(pieces) - 1:
            assert got == []
            assert decoder.buffered == sum(len(p) for p in pieces[: n + 1])
    assert [f.type for f in got] == [T.SEND, T.PING]
    assert got[0].payload is not None
    assert got[0].payload.payload == payload
    assert decoder.buffered == 0
    decoder.eof()


# ------------------------------------------------------------------ bad input


def test_oversize_frame_rejected_from_its_header() -> None:
    decoder = FrameDecoder(max_frame_size=1024)
    with pytest.raises(FrameTooLarge) as info:
        decoder.feed(struct.pack(">I", 1025))
    assert info.value.size == 1025
    assert info.value.limit == 1024
    assert info.value.fatal
    assert decoder.buffered == 0
    with pytest.raises(FrameTooLarge):
        decoder.feed(b"more")


def test_default_limit_is_5mib_plus_padding() -> None:
    assert DEFAULT_MAX_FRAME_SIZE == 5 * 1024 * 1024 + 10 * 1024
    decoder = FrameDecoder()
    decoder.feed(struct.pack(">I", DEFAULT_MAX_FRAME_SIZE))  # at the limit: fine
    with pytest.raises(FrameTooLarge):
        FrameDecoder().feed(struct.pack(">I", DEFAULT_MAX_FRAME_SIZE + 1))


def test_oversize_detected_after_earlier_frames() -> None:
    decoder = FrameDecoder(max_frame_size=64)
    decoder.feed(encode_command(commands.ping()) + struct.pack(">I", 65))
    frames = decoder.frames()
    assert next(frames).type == T.PING
    with pytest.raises(FrameTooLarge):
        next(frames)


def test_truncated_stream() -> None:
    data = encode_command(commands.success(1))
    decoder = FrameDecoder()
    decoder.feed(data[:-1])
    assert list(decoder.frames()) == []
    with pytest.raises(TruncatedFrame) as info:
        decoder.eof()
    assert info.value.buffered == len(data) - 1


def test_bad_checksum_carries_command_and_decoder_continues() -> None:
    good = encode_payload_command(commands.send(9, 42), metadata(42), b"payload")
    bad = bytearray(good)
    bad[-1] ^= 0xFF
    decoder = FrameDecoder()
    decoder.feed(bytes(bad) + encode_command(commands.ping()))
    with pytest.raises(ChecksumMismatch) as info:
        list(decoder.frames())
    assert not info.value.fatal
    assert info.value.command.send.producer_id == 9
    assert info.value.command.send.sequence_id == 42
    assert [f.type for f in decoder.frames()] == [T.PING]


def test_checksum_not_verified_when_disabled() -> None:
    bad = bytearray(encode_payload_command(commands.send(1, 1), metadata(), b"payload"))
    bad[-1] ^= 0xFF
    (frame,) = decode_all(bytes(bad), verify_checksum=False)
    assert frame.payload is not None
    assert frame.payload.payload == b"payloa" + bytes([ord("d") ^ 0xFF])  # delivered as received


def test_unknown_command_type() -> None:
    with pytest.raises(UnknownCommand) as info:
        decode_all(raw_frame(b"\x08\x63"))  # type = 99
    assert info.value.type_number == 99


def test_command_without_type() -> None:
    with pytest.raises(UnknownCommand) as info:
        decode_all(raw_frame(b""))
    assert info.value.type_number is None


def test_command_without_its_body() -> None:
    with pytest.raises(MalformedCommand, match="SUCCESS command without its body"):
        decode_all(raw_frame(pb.BaseCommand(type=T.SUCCESS).SerializeToString()))


def test_command_missing_required_field() -> None:
    command = pb.BaseCommand(type=T.SUCCESS)
    command.success.SetInParent()  # request_id is required
    with pytest.raises(MalformedCommand, match="request_id"):
        decode_all(raw_frame(command.SerializePartialToString()))


def test_garbage_protobuf() -> None:
    with pytest.raises(MalformedCommand):
        decode_all(raw_frame(b"\xff\xff\xff\xff\xff"))


def test_command_size_larger_than_frame() -> None:
    data = struct.pack(">I", 8) + struct.pack(">I", 100) + b"\x08\x12\x92\x01"
    with pytest.raises(MalformedFrame):
        decode_all(data)


def test_frame_too_small_for_command_size_breaks_stream() -> None:
    decoder = FrameDecoder()
    with pytest.raises(BrokenStream):
        decoder.feed(struct.pack(">I", 2) + b"\x00\x00")
    with pytest.raises(BrokenStream):
        list(decoder.frames())


def test_trailing_bytes_after_simple_command() -> None:
    with pytest.raises(MalformedFrame):
        decode_all(raw_frame(commands.ping().SerializeToString(), b"junk"))


def test_payload_command_without_metadata() -> None:
    with pytest.raises(MalformedFrame) as info:
        decode_all(raw_frame(commands.send(1, 2).SerializeToString()))
    assert info.value.command is not None
    assert info.value.command.send.sequence_id == 2


def test_payload_metadata_missing_required() -> None:
    meta = pb.MessageMetadata(producer_name="p").SerializePartialToString()
    rest = struct.pack(">I", len(meta)) + meta + b"x"
    with pytest.raises(MalformedMetadata) as info:
        decode_all(raw_frame(commands.send(1, 2).SerializeToString(), rest))
    assert info.value.command.type == T.SEND


def test_encoding_refuses_missing_required_fields() -> None:
    command = pb.BaseCommand(type=T.CONNECTED)
    command.connected.SetInParent()
    with pytest.raises(MalformedCommand, match="server_version"):
        encode_command(command)


def test_encoding_refuses_type_without_body() -> None:
    with pytest.raises(MalformedCommand):
        encode_command(pb.BaseCommand(type=T.PING))
