"""The client's chunking cores: splitting a message into chunk SENDs and rebuilding it from
chunks (in order, resent, skipping ahead, too many under way, expired)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from magnetar.client.batch_builder import PendingMessage, build_single
from magnetar.client.chunking import ChunkAssembler, split_chunks
from magnetar.client.compression import CompressionType
from magnetar.protocol.message_id import MessageId
from magnetar.wire import pulsar_api_pb2 as pb


def _chunks(
    payload: bytes, size: int, sequence_id: int = 7
) -> list[tuple[pb.MessageMetadata, bytes]]:
    op = build_single(
        PendingMessage(payload, sequence_id, key="k"),
        producer_name="p",
        codec=CompressionType.NONE,
        publish_time_ms=1,
    )
    return [(c.metadata, c.payload) for c in split_chunks(op, size, "p")]


@given(st.binary(min_size=1, max_size=300), st.integers(min_value=1, max_value=64))
def test_split_then_assemble_gives_the_payload_back(payload: bytes, size: int) -> None:
    chunks = _chunks(payload, size)
    assert all(len(p) <= size for _, p in chunks)
    assembler = ChunkAssembler()
    results = [assembler.add(m, MessageId(1, i), p, 0.0) for i, (m, p) in enumerate(chunks)]
    *partial, (whole, given_up) = results
    if len(chunks) == 1:  # no chunk fields on a message that fits (the producer never splits it)
        return
    assert all(r == (None, []) for r in partial)
    assert given_up == []
    assert whole is not None
    assert whole.payload == payload
    assert whole.chunk_ids == tuple(MessageId(1, i) for i in range(len(chunks)))
    assert whole.metadata.partition_key == "k"
    assert len(assembler) == 0


def test_a_resent_chunk_is_only_acknowledged_with_the_rest() -> None:
    (m0, p0), (m1, p1) = _chunks(b"abcdef", 3)
    assembler = ChunkAssembler()
    assembler.add(m0, MessageId(1, 0), p0, 0.0)
    assert assembler.add(m0, MessageId(1, 5), p0, 0.0) == (None, [])  # chunk 0 again
    whole, _ = assembler.add(m1, MessageId(1, 6), p1, 0.0)
    assert whole is not None
    assert whole.payload == b"abcdef"
    assert whole.chunk_ids == (MessageId(1, 0), MessageId(1, 5), MessageId(1, 6))


def test_a_gap_gives_the_message_up_for_redelivery() -> None:
    (m0, p0), _, (m2, p2) = _chunks(b"abcdefgh", 3)
    assembler = ChunkAssembler()
    assembler.add(m0, MessageId(1, 0), p0, 0.0)
    whole, given_up = assembler.add(m2, MessageId(1, 2), p2, 0.0)
    assert whole is None
    assert [g.chunk_ids for g in given_up] == [(MessageId(1, 0), MessageId(1, 2))]
    assert not given_up[0].acknowledge


def test_the_oldest_message_gives_way_when_too_many_are_under_way() -> None:
    assembler = ChunkAssembler(max_pending=1, auto_ack_oldest=True)
    (a0, pa), _ = _chunks(b"aaaa", 2, sequence_id=1)
    (b0, pb_), _ = _chunks(b"bbbb", 2, sequence_id=2)
    assembler.add(a0, MessageId(1, 0), pa, 0.0)
    _, given_up = assembler.add(b0, MessageId(1, 1), pb_, 0.0)
    assert [(g.chunk_ids, g.acknowledge) for g in given_up] == [((MessageId(1, 0),), True)]


def test_an_incomplete_message_expires() -> None:
    assembler = ChunkAssembler(expire_s=10)
    (m0, p0), _ = _chunks(b"abcd", 2)
    assembler.add(m0, MessageId(1, 0), p0, 0.0)
    assert assembler.expire(5.0) == []
    assert [g.chunk_ids for g in assembler.expire(10.0)] == [(MessageId(1, 0),)]
    assert len(assembler) == 0
