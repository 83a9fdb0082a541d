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
import struct
from collections.abc import Callable, Mapping

from magnetar.client.compression import CompressionType, compress
from magnetar.client.message import NO_PROPERTIES
from magnetar.protocol.hand_encoded import plain_metadata, schema_version_field
from magnetar.protocol.message_id import MessageId, unchecked_message_id
from magnetar.telemetry import get_logger
from magnetar.wire import pulsar_api_pb2 as pb

log = get_logger(__name__)

# ``callback(context, result)``: result is the message id, or the error that failed the send.
ReceiptCallback = Callable[[object, "MessageId | BaseException"], None]
_U32 = struct.Struct(">I")


class PendingMessage:
    """One application message, from send() until its receipt (or failure).

    A ``__slots__`` class rather than a dataclass: one is built per message sent, and a
    dataclass ``__init__`` with eight defaults costs more (docs/benchmarks.md, "Per-message
    costs"). The message is settled
    either through ``future`` or by calling ``callback(context, result)`` (the no-future path
    of :meth:`~magnetar.client.producer.Producer.send_callback`). ``plain`` says the message
    carries nothing but its payload and sequence id (the batch encodes it from a template).
    """

    __slots__ = (
        "callback",
        "context",
        "deliver_at_ms",
        "event_time_ms",
        "future",
        "key",
        "ordering_key",
        "payload",
        "plain",
        "properties",
        "sequence_id",
        "size",
    )

    def __init__(
        self,
        payload: bytes,
        sequence_id: int,
        key: str | None = None,
        properties: Mapping[str, str] = NO_PROPERTIES,
        event_time_ms: int | None = None,
        ordering_key: bytes | None = None,
        deliver_at_ms: int | None = None,
        future: asyncio.Future[MessageId] | None = None,
        callback: ReceiptCallback | None = None,
        context: object = None,
    ) -> None:
        self.payload = payload
        self.sequence_id = sequence_id
        self.key = key
        self.properties = properties
        self.event_time_ms = event_time_ms
        self.ordering_key = ordering_key
        self.deliver_at_ms = deliver_at_ms
        self.future = future
        self.callback = callback
        self.context = context
        self.size = len(payload)
        self.plain = (
            key is None and not properties and event_time_ms is None and (ordering_key is None)
        )

    def settle(self, result: MessageId | BaseException) -> None:
        """Complete the future or call the callback (once; a callback error is logged)."""
        callback = self.callback
        if callback is not None:
            self.callback = None
            try:
                callback(self.context, result)
            except Exception as exc:
                log.warning("client_send_callback_error", error=repr(exc))
            return
        future = self.future
        if future is not None and not future.done():
            if isinstance(result, BaseException):
                future.set_exception(result)
            else:
                future.set_result(result)


class OpSend:
    """One SEND frame's content and the messages it acknowledges.

    Its metadata is a protobuf message, or, for a plain single message
    (:func:`build_single`), the bytes :func:`~magnetar.protocol.hand_encoded.plain_metadata`
    wrote (``metadata`` None, ``encoded`` set): :attr:`metadata` parses them the first time
    it is asked for (chunking does), and the send writes them as they are."""

    __slots__ = (
        "_metadata",
        "created_at",
        "encoded",
        "highest_sequence_id",
        "is_batch",
        "messages",
        "payload",
        "push_index",
        "sequence_id",
        "wire_messages",
    )

    def __init__(
        self,
        sequence_id: int,
        highest_sequence_id: int,
        metadata: pb.MessageMetadata | None,
        payload: bytes,
        messages: list[PendingMessage],
        is_batch: bool,
        created_at: float = 0.0,
        push_index: int = 0,
        wire_messages: int = 0,
        encoded: bytes = b"",
    ) -> None:
        self.sequence_id = sequence_id
        self.highest_sequence_id = highest_sequence_id
        self._metadata = metadata
        self.payload = payload
        self.messages = messages
        self.is_batch = is_batch
        self.created_at = created_at
        self.push_index = push_index  # its place in the producer's send order
        # a forwarded entry: the messages its SEND counts (0: len(messages))
        self.wire_messages = wire_messages
        self.encoded = encoded

    @property
    def metadata(self) -> pb.MessageMetadata:
        """The metadata as a protobuf message (from then on the one the send writes)."""
        if self._metadata is None:
            self._metadata = pb.MessageMetadata.FromString(self.encoded)
            self.encoded = b""
        return self._metadata

    def metadata_bytes(self) -> bytes:
        """The serialized metadata, as the SEND carries it."""
        metadata = self._metadata
        return self.encoded if metadata is None else metadata.SerializeToString()

    def name_schema(self, version: bytes) -> None:
        """Name the schema version the message was written with (a non-empty one), once: a
        hand-encoded metadata gets the field appended, without a parse."""
        if self._metadata is None:
            self.encoded += schema_version_field(version)
        else:
            self._metadata.schema_version = version

    @property
    def num_messages(self) -> int:
        return len(self.messages)

    def message_ids(self, ledger_id: int, entry_id: int, partition: int) -> list[MessageId]:
        """The id of each message, given where SEND_RECEIPT says the entry was stored."""
        if not self.is_batch:
            return [unchecked_message_id(ledger_id, entry_id, -1, partition, 0)]
        n = self.num_messages
        return [unchecked_message_id(ledger_id, entry_id, i, partition, n) for i in range(n)]


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
    if message.properties:
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
    """An OpSend for one unbatched message (a plain one's metadata encoded by hand)."""
    if message.plain and message.deliver_at_ms is None and codec is CompressionType.NONE:
        encoded = plain_metadata(producer_name, message.sequence_id, publish_time_ms)
        return OpSend(
            message.sequence_id, message.sequence_id, None, message.payload, [message], False,
            encoded=encoded,
        )  # fmt: skip
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


def encode_batch_payload(messages: list[PendingMessage]) -> bytes:
    """The uncompressed batch payload (the layout of :mod:`magnetar.protocol.batch`).

    ``[u32 size][SingleMessageMetadata][payload]`` per message. A plain message's metadata
    (payload_size and sequence_id only) is serialized from one reused template, cheaper than
    building, copying and serializing a new one per message (docs/benchmarks.md, "Per-message
    costs").
    """
    template = pb.SingleMessageMetadata()
    pack = _U32.pack
    parts: list[bytes] = []
    append = parts.append
    for message in messages:
        if message.plain:
            template.payload_size = message.size
            template.sequence_id = message.sequence_id
            raw = template.SerializeToString()
        else:
            raw = single_message_metadata(message).SerializeToString()
        append(pack(len(raw)))
        append(raw)
        append(message.payload)
    return b"".join(parts)


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

    def fits_alone(self, message: PendingMessage) -> bool:
        """Whether ``message`` may be batched at all (oversized ones go alone).

        Delayed messages go alone too, as in the Java client (the broker delays whole entries).
        """
        return message.deliver_at_ms is None and message.size <= self.max_bytes

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

    def add(self, message: PendingMessage) -> bool:
        """Add ``message``; returns whether the batch is now full."""
        self._messages.append(message)
        self._bytes += message.size
        return len(self._messages) >= self.max_messages or self._bytes >= self.max_bytes

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
        raw = encode_batch_payload(messages)
        payload = _compress_into(metadata, raw, codec)
        return OpSend(
            sequence_id=first.sequence_id,
            highest_sequence_id=messages[-1].sequence_id,
            metadata=metadata,
            payload=payload,
            messages=messages,
            is_batch=True,
        )
