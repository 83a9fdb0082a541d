"""Building what a producer puts on the wire: single messages and batches, sans-I/O.

A :class:`PendingMessage` is one message the application sent and the broker has not yet
acknowledged. An :class:`OpSend` is one SEND: a single message, or a batch of messages whose
uncompressed payload is the batch format of :mod:`magnetar.protocol.batch`. Compression
applies to the whole payload; when the codec is not NONE the metadata carries ``compression``
and ``uncompressed_size`` (the C++ client's rule). A batch's metadata holds the first message's
sequence id and ``num_messages_in_batch``; each message's key, properties, event time and
sequence id travel in its SingleMessageMetadata.

:class:`BatchBuilder` accumulates messages up to ``max_messages`` and ``max_bytes`` (payload
bytes, the Java/C++ accounting) and is emptied by :meth:`BatchBuilder.build`. One producer
owns one builder and uses it from its own task only. Nothing here does I/O or needs a loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field

from magnetar.client.compression import CompressionType, compress
from magnetar.protocol.batch import build_batch
from magnetar.protocol.message_id import MessageId
from magnetar.wire import pulsar_api_pb2 as pb


@dataclass
class PendingMessage:
    """One application message, from send() until its receipt (or failure)."""

    payload: bytes
    sequence_id: int
    key: str | None = None
    properties: Mapping[str, str] = field(default_factory=dict)
    event_time_ms: int | None = None
    ordering_key: bytes | None = None
    deliver_at_ms: int | None = None
    future: asyncio.Future[MessageId] | None = None

    @property
    def size(self) -> int:
        return len(self.payload)

    @property
    def batchable(self) -> bool:
        # Delayed messages go alone, as in the Java client (the broker delays whole entries).
        return self.deliver_at_ms is None


@dataclass
class OpSend:
    """One SEND frame's content and the messages it acknowledges."""

    sequence_id: int
    highest_sequence_id: int
    metadata: pb.MessageMetadata
    payload: bytes
    messages: list[PendingMessage]
    is_batch: bool
    created_at: float = 0.0

    @property
    def num_messages(self) -> int:
        return len(self.messages)

    def message_ids(self, receipt: MessageId, partition: int) -> list[MessageId]:
        """The id of each message, given the entry id from SEND_RECEIPT."""
        if not self.is_batch:
            return [MessageId(receipt.ledger_id, receipt.entry_id, -1, partition)]
        n = self.num_messages
        return [MessageId(receipt.ledger_id, receipt.entry_id, i, partition, n) for i in range(n)]


def _compress_into(metadata: pb.MessageMetadata, payload: bytes, codec: CompressionType) -> bytes:
    if codec is CompressionType.NONE:
        return payload
    metadata.compression = int(codec)  # type: ignore[assignment]
    metadata.uncompressed_size = len(payload)
    return compress(codec, payload)


def _copy_message_fields(
    message: PendingMessage, target: pb.MessageMetadata | pb.SingleMessageMetadata
) -> None:
    """The per-message fields both metadata kinds carry under the same names."""
    for k, v in message.properties.items():
        target.properties.add(key=k, value=v)
    if message.key is not None:
        target.partition_key = message.key
    if message.ordering_key is not None:
        target.ordering_key = message.ordering_key
    if message.event_time_ms is not None:
        target.event_time = message.event_time_ms


def build_single(
    message: PendingMessage,
    *,
    producer_name: str,
    codec: CompressionType,
    publish_time_ms: int,
) -> OpSend:
    """An OpSend for one unbatched message."""
    metadata = pb.MessageMetadata(
        producer_name=producer_name,
        sequence_id=message.sequence_id,
        publish_time=publish_time_ms,
    )
    _copy_message_fields(message, metadata)
    if message.deliver_at_ms is not None:
        metadata.deliver_at_time = message.deliver_at_ms
    payload = _compress_into(metadata, message.payload, codec)
    return OpSend(
        sequence_id=message.sequence_id,
        highest_sequence_id=message.sequence_id,
        metadata=metadata,
        payload=payload,
        messages=[message],
        is_batch=False,
    )


def single_message_metadata(message: PendingMessage) -> pb.SingleMessageMetadata:
    single = pb.SingleMessageMetadata(payload_size=message.size, sequence_id=message.sequence_id)
    _copy_message_fields(message, single)
    return single


class BatchBuilder:
    """Accumulates messages for one batch; bounded by message count and payload bytes."""

    def __init__(self, *, max_messages: int = 1000, max_bytes: int = 128 * 1024) -> None:
        if max_messages < 1 or max_bytes < 1:
            raise ValueError("batch limits must be positive")
        self.max_messages = max_messages
        self.max_bytes = max_bytes
        self._messages: list[PendingMessage] = []
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._messages)

    @property
    def empty(self) -> bool:
        return not self._messages

    @property
    def size_bytes(self) -> int:
        return self._bytes

    @property
    def messages(self) -> list[PendingMessage]:
        return list(self._messages)

    def fits_alone(self, message: PendingMessage) -> bool:
        """Whether ``message`` may be batched at all (oversized ones go alone)."""
        return message.batchable and message.size <= self.max_bytes

    def has_space(self, message: PendingMessage) -> bool:
        """Whether ``message`` can join the current batch without exceeding a limit."""
        if not self._messages:
            return True
        return (
            len(self._messages) < self.max_messages and self._bytes + message.size <= self.max_bytes
        )

    @property
    def full(self) -> bool:
        return len(self._messages) >= self.max_messages or self._bytes >= self.max_bytes

    def add(self, message: PendingMessage) -> None:
        self._messages.append(message)
        self._bytes += message.size

    def drain(self) -> list[PendingMessage]:
        """Take every message out, leaving the builder empty."""
        messages, self._messages, self._bytes = self._messages, [], 0
        return messages

    def build(self, *, producer_name: str, codec: CompressionType, publish_time_ms: int) -> OpSend:
        """The batch as one OpSend; the builder is empty afterwards."""
        messages = self.drain()
        if not messages:
            raise ValueError("cannot build an empty batch")
        first = messages[0]
        metadata = pb.MessageMetadata(
            producer_name=producer_name,
            sequence_id=first.sequence_id,
            publish_time=publish_time_ms,
            num_messages_in_batch=len(messages),
        )
        raw = build_batch((single_message_metadata(m), m.payload) for m in messages)
        payload = _compress_into(metadata, raw, codec)
        return OpSend(
            sequence_id=first.sequence_id,
            highest_sequence_id=messages[-1].sequence_id,
            metadata=metadata,
            payload=payload,
            messages=messages,
            is_batch=True,
        )
