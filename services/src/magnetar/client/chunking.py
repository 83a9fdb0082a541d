"""Chunked messages in ``magnetar.client``, sans-I/O: splitting on the producer, rebuilding on
the consumer, byte-compatible with the official clients.

Producer (``chunking_enabled``, batching off): a single message whose (compressed) payload is
larger than the broker's max message size (from CONNECTED) is sent as SENDs of at most that many
payload bytes, all with the message's sequence id and metadata plus ``uuid``
(``<producer>-<sequence id>``), ``chunk_id``, ``num_chunks_from_msg`` and
``total_chunk_msg_size``. :func:`split_chunks` builds them; only the last one carries the
application's message, so the send completes with the last chunk's receipt (its id is the
message's id, as the last chunk id is what Pulsar's ChunkMessageId reports for acks).

Consumer: :class:`ChunkAssembler` collects the chunks of each message under way (keyed by
producer name and uuid), in order, and hands back the whole payload and every chunk's id when
the last arrives: acknowledging the message acknowledges them all. A chunk that repeats one
already held (a resend) is kept only as an id to acknowledge. A chunk that skips ahead, a
message beyond ``max_pending_chunked_message`` (the oldest under way gives way, acknowledged
with ``auto_ack_oldest_chunked_message_on_queue_full``, else redelivered) and a message still
incomplete after ``expire_time_of_incomplete_chunked_message_s`` are given up: their chunk ids
come back to the consumer to redeliver (or acknowledge).

Pure; one producer's or consumer's task.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from magnetar.client.batch_builder import OpSend
from magnetar.protocol.message_id import MessageId
from magnetar.wire import pulsar_api_pb2 as pb


def split_chunks(op: OpSend, max_chunk_size: int, producer_name: str) -> list[OpSend]:
    """``op`` (a single message) as chunks of at most ``max_chunk_size`` payload bytes."""
    if op.is_batch:
        raise ValueError("a batch cannot be chunked")
    total = len(op.payload)
    count = -(-total // max_chunk_size)
    uuid = f"{producer_name}-{op.sequence_id}"
    chunks = []
    for chunk_id in range(count):
        metadata = pb.MessageMetadata()
        metadata.CopyFrom(op.metadata)
        metadata.uuid = uuid
        metadata.chunk_id = chunk_id
        metadata.num_chunks_from_msg = count
        metadata.total_chunk_msg_size = total
        start = chunk_id * max_chunk_size
        chunks.append(
            OpSend(
                sequence_id=op.sequence_id,
                highest_sequence_id=op.highest_sequence_id,
                metadata=metadata,
                payload=op.payload[start : start + max_chunk_size],
                messages=op.messages if chunk_id == count - 1 else [],
                is_batch=False,
            )
        )
    return chunks


@dataclass
class _Pending:
    total_chunks: int
    started_at: float
    parts: list[bytes] = field(default_factory=list)
    ids: list[MessageId] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Assembled:
    """A whole chunked message: the last chunk's metadata, the joined payload, every chunk id."""

    metadata: pb.MessageMetadata
    payload: bytes
    chunk_ids: tuple[MessageId, ...]


@dataclass(frozen=True, slots=True)
class GivenUp:
    """Chunks of a message that will not be completed here (redeliver or acknowledge them)."""

    chunk_ids: tuple[MessageId, ...]
    acknowledge: bool = False


class ChunkAssembler:
    """The chunked messages under way on one consumer."""

    def __init__(
        self, max_pending: int = 10, expire_s: float = 60.0, auto_ack_oldest: bool = False
    ) -> None:
        self.max_pending = max_pending
        self.expire_s = expire_s
        self.auto_ack_oldest = auto_ack_oldest
        self._pending: OrderedDict[tuple[str, str], _Pending] = OrderedDict()

    def __len__(self) -> int:
        return len(self._pending)

    def add(
        self, metadata: pb.MessageMetadata, chunk_id_of: MessageId, payload: bytes, now: float
    ) -> tuple[Assembled | None, list[GivenUp]]:
        """Take one chunk; the message if it is now complete, and what was given up."""
        key = (metadata.producer_name, metadata.uuid)
        given_up: list[GivenUp] = []
        pending = self._pending.get(key)
        if metadata.chunk_id == 0 and pending is None:
            while len(self._pending) >= self.max_pending:
                _, oldest = self._pending.popitem(last=False)
                given_up.append(GivenUp(tuple(oldest.ids), acknowledge=self.auto_ack_oldest))
            pending = self._pending[key] = _Pending(metadata.num_chunks_from_msg, now)
        elif pending is None:
            return None, [GivenUp((chunk_id_of,))]  # its first chunk never came here
        expected = len(pending.parts)
        if metadata.chunk_id < expected:
            pending.ids.append(chunk_id_of)  # a resent chunk: only acknowledged with the rest
            return None, given_up
        if metadata.chunk_id > expected:
            del self._pending[key]
            given_up.append(GivenUp((*pending.ids, chunk_id_of)))
            return None, given_up
        pending.parts.append(payload)
        pending.ids.append(chunk_id_of)
        if len(pending.parts) < pending.total_chunks:
            return None, given_up
        del self._pending[key]
        return Assembled(metadata, b"".join(pending.parts), tuple(pending.ids)), given_up

    def expire(self, now: float) -> list[GivenUp]:
        """The messages incomplete for longer than ``expire_s``."""
        old = [k for k, p in self._pending.items() if now - p.started_at >= self.expire_s]
        return [GivenUp(tuple(self._pending.pop(k).ids)) for k in old]

    def clear(self) -> None:
        """Forget everything (the consumer reconnects: the broker redelivers the chunks)."""
        self._pending.clear()
