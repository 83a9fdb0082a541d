"""Hypothesis: frame codec round-trips over random chunkings, and a decoder fuzzed with
garbage or corrupted frames raises nothing but typed protocol errors."""

from __future__ import annotations

import itertools
from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st

from magnetar.protocol import commands
from magnetar.protocol.errors import ProtocolError
from magnetar.protocol.frame import (
    Frame,
    FrameDecoder,
    encode_command,
    encode_message,
    encode_payload_command,
    encode_payload_section,
)
from magnetar.protocol.message_id import INT64_MAX, MessageId
from magnetar.wire import pulsar_api_pb2 as pb

u64 = st.integers(min_value=0, max_value=2**64 - 1)
i64 = st.integers(min_value=-1, max_value=INT64_MAX)
small_text = st.text(max_size=20)
message_ids = st.builds(
    MessageId,
    ledger_id=i64,
    entry_id=i64,
    batch_index=st.integers(min_value=-1, max_value=1000),
    partition=st.integers(min_value=-1, max_value=1000),
)
server_errors = st.sampled_from(pb.ServerError.values())

simple_commands: st.SearchStrategy[pb.BaseCommand] = st.one_of(
    st.just(commands.ping()),
    st.just(commands.pong()),
    st.builds(commands.success, u64),
    st.builds(commands.error, u64, server_errors, small_text),
    st.builds(commands.send_receipt, u64, u64, message_ids),
    st.builds(commands.flow, u64, st.integers(min_value=0, max_value=2**32 - 1)),
    st.builds(commands.partitioned_metadata_response, u64, st.integers(0, 2**32 - 1)),
    st.builds(
        lambda r, url, auth: commands.lookup_response(
            r, broker_service_url=url, authoritative=auth
        ),
        u64,
        small_text,
        st.booleans(),
    ),
    st.builds(
        lambda c, ids, r: commands.ack(c, ids, request_id=r),
        u64,
        st.lists(message_ids, max_size=5),
        st.none() | u64,
    ),
    st.builds(
        lambda t, p, r, name: commands.producer(t, p, r, producer_name=name),
        small_text,
        u64,
        u64,
        st.none() | small_text,
    ),
    st.builds(
        lambda v, ver: commands.connect(client_version=v, protocol_version=ver),
        small_text,
        st.integers(min_value=-(2**31), max_value=2**31 - 1),
    ),
    st.builds(commands.get_topics_of_namespace_response, u64, st.lists(small_text, max_size=5)),
)

metadatas = st.builds(
    lambda name, seq, t, props, key: pb.MessageMetadata(
        producer_name=name,
        sequence_id=seq,
        publish_time=t,
        properties=[pb.KeyValue(key=k, value=v) for k, v in props.items()],
        **({"partition_key": key} if key is not None else {}),
    ),
    small_text,
    u64,
    u64,
    st.dictionaries(small_text, small_text, max_size=3),
    st.none() | small_text,
)
payloads = st.binary(max_size=300)


@st.composite
def payload_frames(draw: st.DrawFn) -> tuple[bytes, pb.BaseCommand, pb.MessageMetadata, bytes]:
    meta = draw(metadatas)
    payload = draw(payloads)
    checksum = draw(st.booleans())
    if draw(st.booleans()):
        command = commands.send(draw(u64), draw(u64), num_messages=draw(st.none() | st.just(3)))
        return (
            encode_payload_command(command, meta, payload, checksum=checksum),
            command,
            meta,
            payload,
        )
    command = commands.message(
        draw(u64), draw(message_ids), redelivery_count=draw(st.integers(0, 9))
    )
    bem = draw(st.none() | st.builds(pb.BrokerEntryMetadata, broker_timestamp=u64, index=u64))
    stored = encode_payload_section(meta, payload, checksum=checksum)
    return encode_message(command, stored, broker_entry_metadata=bem), command, meta, payload


Expected = tuple[pb.BaseCommand, pb.MessageMetadata | None, bytes | None]


@st.composite
def streams(draw: st.DrawFn) -> tuple[bytes, list[Expected]]:
    parts: list[bytes] = []
    expected: list[Expected] = []
    for _ in range(draw(st.integers(min_value=1, max_value=6))):
        if draw(st.booleans()):
            command = draw(simple_commands)
            parts.append(encode_command(command))
            expected.append((command, None, None))
        else:
            data, command, meta, payload = draw(payload_frames())
            parts.append(data)
            expected.append((command, meta, payload))
    return b"".join(parts), expected


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


@given(streams(), st.lists(st.integers(min_value=0, max_value=10_000), max_size=20))
def test_round_trip_over_random_chunks(
    stream: tuple[bytes, list[Expected]], cuts: list[int]
) -> None:
    data, expected = stream
    decoder = FrameDecoder()
    frames: list[Frame] = []
    for chunk in chunked(data, cuts):
        decoder.feed(chunk)
        frames.extend(decoder.frames())
    decoder.eof()
    assert len(frames) == len(expected)
    for frame, (command, meta, payload) in zip(frames, expected, strict=True):
        assert frame.command == command
        if meta is None:
            assert frame.payload is None
        else:
            assert frame.payload is not None
            assert frame.payload.metadata == meta
            assert frame.payload.payload == payload


@given(
    streams(),
    st.lists(st.integers(min_value=0, max_value=10_000), max_size=20),
    st.lists(st.booleans(), min_size=21, max_size=21),
)
def test_frames_taken_now_and_then_over_random_chunks(
    stream: tuple[bytes, list[Expected]], cuts: list[int], take: list[bool]
) -> None:
    """Several feeds before the frames are taken (complete frames and a cut one left between
    feeds, a frame collected over many feeds) decode the same stream; ``buffered`` counts
    what was fed and not yet returned."""
    data, expected = stream
    decoder = FrameDecoder()
    commands_seen: list[pb.BaseCommand] = []
    fed = 0
    for chunk, take_now in zip(chunked(data, cuts), take, strict=False):
        decoder.feed(chunk)
        fed += len(chunk)
        assert decoder.buffered <= fed
        if take_now:
            commands_seen.extend(frame.command for frame in decoder.frames())
    commands_seen.extend(frame.command for frame in decoder.frames())
    assert decoder.buffered == 0
    decoder.eof()
    assert commands_seen == [command for command, _, _ in expected]


def drain(decoder: FrameDecoder, chunks: list[bytes]) -> None:
    """Feed everything, skipping frame-local errors; stop at the first fatal one.

    Anything that is not a ProtocolError escapes and fails the test.
    """
    stopped: ProtocolError | None = None
    try:
        for chunk in chunks:
            decoder.feed(chunk)
            while True:
                try:
                    for _ in decoder.frames():
                        pass
                    break
                except ProtocolError as exc:
                    if exc.fatal:
                        raise
        decoder.eof()
    except ProtocolError as exc:
        stopped = exc
    if stopped is not None:
        assert stopped.fatal
        assert decoder.buffered == 0  # a broken decoder holds nothing
        again: ProtocolError | None = None
        try:
            decoder.feed(b"\x00")
        except ProtocolError as exc:
            again = exc
        assert again is stopped


@given(st.binary(max_size=2000), st.lists(st.integers(min_value=0, max_value=2000), max_size=10))
def test_garbage_raises_only_protocol_errors(data: bytes, cuts: list[int]) -> None:
    drain(FrameDecoder(max_frame_size=4096), chunked(data, cuts))


corruptions: st.SearchStrategy[Callable[[bytes], bytes]] = st.one_of(
    st.builds(
        lambda i, b: lambda d: d[: i % max(len(d), 1)] + bytes([b]) + d[i % max(len(d), 1) + 1 :],
        st.integers(min_value=0),
        st.integers(0, 255),
    ),
    st.builds(lambda i: lambda d: d[: i % max(len(d), 1)], st.integers(min_value=0)),
    st.builds(
        lambda i, junk: lambda d: d[: i % max(len(d), 1)] + junk + d[i % max(len(d), 1) :],
        st.integers(min_value=0),
        st.binary(min_size=1, max_size=8),
    ),
)


@given(streams(), st.lists(corruptions, min_size=1, max_size=4), st.lists(st.integers(0, 5000)))
def test_corrupted_frames_raise_only_protocol_errors(
    stream: tuple[bytes, list[Expected]],
    corrupt: list[Callable[[bytes], bytes]],
    cuts: list[int],
) -> None:
    data = stream[0]
    for mutate in corrupt:
        data = mutate(data)
    drain(FrameDecoder(max_frame_size=64 * 1024), chunked(data, cuts))
