"""The receive side of a consumer, sans-I/O: options, permits, batch unpacking, start filter.

:class:`ConsumerOptions` is everything ``Client.subscribe`` accepts besides topic and
subscription. :class:`ReceiverPermits` keeps FLOW permits: ``receiver_queue_size`` granted at
subscribe, refilled in batches of half the queue as the application takes messages; permits
count messages, not entries. :func:`unpack_entry` turns one MESSAGE's payload into messages
(decompressing, splitting a batch, skipping the indexes the broker's ack set marks
acknowledged). :func:`is_prior` is a reader's start filter (the C++ client's ``isPrior``).

Pure values and functions; no I/O, no event loop.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import NamedTuple, cast

from google.protobuf.message import DecodeError

from magnetar.client.compression import decompress
from magnetar.client.dead_letter import DeadLetterPolicy
from magnetar.client.errors import InvalidConfiguration
from magnetar.client.message import NO_PROPERTIES, Message, new_message
from magnetar.client.schema import SchemaInfo
from magnetar.protocol.errors import MalformedBatch
from magnetar.protocol.hand_decoded import Delivery
from magnetar.protocol.message_id import (
    EARLIEST,
    LATEST,
    MessageId,
    ack_set_to_bits,
    unchecked_message_id,
)
from magnetar.wire import pulsar_api_pb2 as pb

_U32 = struct.Struct(">I")


class SubscriptionType(enum.IntEnum):
    EXCLUSIVE = pb.CommandSubscribe.Exclusive
    SHARED = pb.CommandSubscribe.Shared
    FAILOVER = pb.CommandSubscribe.Failover
    KEY_SHARED = pb.CommandSubscribe.Key_Shared


class InitialPosition(enum.IntEnum):
    LATEST = pb.CommandSubscribe.Latest
    EARLIEST = pb.CommandSubscribe.Earliest


def parse_subscription_type(value: SubscriptionType | int | str) -> SubscriptionType:
    """A SubscriptionType from itself, its pb value or a name ("Shared", "key_shared" ...)."""
    try:
        if isinstance(value, str):
            return SubscriptionType[value.upper()]
        return SubscriptionType(int(value))
    except (KeyError, ValueError) as exc:
        raise InvalidConfiguration(f"unknown subscription type {value!r}") from exc


def parse_initial_position(value: InitialPosition | int | str) -> InitialPosition:
    try:
        if isinstance(value, str):
            return InitialPosition[value.upper()]
        return InitialPosition(int(value))
    except (KeyError, ValueError) as exc:
        raise InvalidConfiguration(f"unknown initial position {value!r}") from exc


@dataclass(frozen=True)
class ConsumerOptions:
    """Everything ``Client.subscribe`` accepts besides topic and subscription (see docs)."""

    subscription_type: SubscriptionType = SubscriptionType.EXCLUSIVE
    initial_position: InitialPosition = InitialPosition.LATEST
    durable: bool = True
    consumer_name: str | None = None
    priority_level: int | None = None
    receiver_queue_size: int = 1000
    ack_timeout_s: float = 0.0
    negative_ack_redelivery_delay_s: float = 60.0
    ack_grouping_time_s: float = 0.1
    ack_grouping_max_size: int = 1000
    batch_index_ack_enabled: bool = False
    dead_letter_policy: DeadLetterPolicy | None = None
    enable_retry: bool = False  # also consume the retry topic; reconsume_later (retry_letter.py)
    read_compacted: bool = False
    properties: Mapping[str, str] = field(default_factory=dict)
    subscription_properties: Mapping[str, str] = field(default_factory=dict)
    schema: SchemaInfo | None = None  # declared in SUBSCRIBE (magnetar.client.schema)
    start_message_id: MessageId | None = None  # non-durable (readers) only
    start_message_id_inclusive: bool = False
    pattern_auto_discovery_period_s: float = 60.0
    # Chunked messages (magnetar.client.chunking), the official clients' names and defaults.
    max_pending_chunked_message: int = 10
    auto_ack_oldest_chunked_message_on_queue_full: bool = False
    expire_time_of_incomplete_chunked_message_s: float = 60.0

    def __post_init__(self) -> None:
        if self.receiver_queue_size < 1:
            raise InvalidConfiguration("receiver_queue_size must be at least 1")
        if self.ack_timeout_s < 0 or self.negative_ack_redelivery_delay_s < 0:
            raise InvalidConfiguration("timeouts and delays cannot be negative")
        if self.pattern_auto_discovery_period_s <= 0:
            raise InvalidConfiguration("pattern_auto_discovery_period_s must be positive")
        if self.max_pending_chunked_message < 1:
            raise InvalidConfiguration("max_pending_chunked_message must be at least 1")

    @property
    def allows_cumulative_ack(self) -> bool:
        return self.subscription_type in (SubscriptionType.EXCLUSIVE, SubscriptionType.FAILOVER)


# ---------------------------------------------------------------------- sans-I/O receive side


@dataclass
class ReceiverPermits:
    """FLOW accounting: all permits at subscribe, then refills of at least half the queue.

    ``release`` runs once per message taken: ``threshold`` is a field, not a property.
    """

    queue_size: int
    _unreported: int = 0
    threshold: int = field(init=False)

    def __post_init__(self) -> None:
        self.threshold = max(1, self.queue_size // 2)

    def initial(self) -> int:
        self._unreported = 0
        return self.queue_size

    def release(self, count: int = 1) -> int:
        """``count`` messages left the queue; returns the permits to send now (0 = not yet)."""
        unreported = self._unreported + count
        if unreported < self.threshold:
            self._unreported = unreported
            return 0
        self._unreported = 0
        return unreported


class Unpacked(NamedTuple):
    """One entry's messages; ``charged`` = permits the broker counted for it.

    A NamedTuple: one is built per MESSAGE frame, which unbatched is one per message.
    """

    messages: list[Message]
    charged: int
    batch_size: int  # 0 for a single (non-batch) message


_new_unpacked = cast(
    Callable[[tuple[list[Message], int, int]], Unpacked], partial(tuple.__new__, Unpacked)
)


def unpack_entry(
    topic: str,
    delivery: Delivery,
    metadata: pb.MessageMetadata,
    payload: bytes,
    partition: int = -1,
) -> Unpacked:
    """The messages of one MESSAGE frame (decompressed; acknowledged batch indexes skipped).

    ``partition`` is the ids' partition when the broker's id carries none (a consumer of one
    partition of a partitioned topic). Raises DecompressionError or MalformedBatch for a
    payload that cannot be read.
    """
    if metadata.compression:  # pb.NONE is 0
        payload = decompress(metadata.compression, payload, metadata.uncompressed_size)
    ledger, entry, wire_partition = delivery.ledger_id, delivery.entry_id, delivery.partition
    if wire_partition >= 0:  # -1: the id named none
        partition = wire_partition
    key_of = metadata.partition_key if metadata.HasField("partition_key") else None
    ordering = metadata.ordering_key if metadata.HasField("ordering_key") else None
    if not metadata.HasField("num_messages_in_batch"):  # is_batch, without the call
        properties = (
            {kv.key: kv.value for kv in metadata.properties}
            if metadata.properties
            else NO_PROPERTIES
        )
        message = new_message((
            topic, unchecked_message_id(ledger, entry, -1, partition, 0),
            b"" if metadata.null_value else payload, key_of, properties,
            metadata.publish_time, metadata.event_time or None, delivery.redelivery_count,
            metadata.producer_name, metadata.sequence_id, ordering,
            metadata.replicated_from if metadata.HasField("replicated_from") else None,
        ))  # fmt: skip
        return _new_unpacked(([message], 1, 0))
    size = metadata.num_messages_in_batch
    if size < 0:
        raise MalformedBatch(f"negative message count {size}")
    ack_set = delivery.ack_set
    unacked = ((1 << size) - 1) & ack_set_to_bits(ack_set) if ack_set else -1
    messages: list[Message] = []
    append = messages.append
    charged = 0
    redeliveries = delivery.redelivery_count
    publish_time, producer, base_sequence = (
        metadata.publish_time, metadata.producer_name, metadata.sequence_id,
    )  # fmt: skip
    origin = metadata.replicated_from if metadata.HasField("replicated_from") else None
    end = len(payload)
    offset = 0
    for index in range(size):
        # [meta_size u32 BE][SingleMessageMetadata][payload] (magnetar.protocol.batch), read
        # in one pass; the usual metadata (payload_size, sequence_id) without protobuf.
        if end - offset < 4:
            raise MalformedBatch(f"message {index}: metadata size missing")
        meta_end = offset + 4 + _U32.unpack_from(payload, offset)[0]
        if meta_end > end:
            raise MalformedBatch(f"message {index}: metadata longer than the payload")
        scanned = _scan_single(payload, offset + 4, meta_end)
        if scanned is None:
            single = _parse_single(payload, offset + 4, meta_end, index)
            scanned = (
                single.payload_size,
                single.sequence_id if single.HasField("sequence_id") else -1,
                single.event_time, single.null_value, single.compacted_out,
            )  # fmt: skip
            key = single.partition_key if single.HasField("partition_key") else key_of
            order = single.ordering_key if single.HasField("ordering_key") else ordering
            properties = (
                {kv.key: kv.value for kv in single.properties}
                if single.properties
                else NO_PROPERTIES
            )
        else:
            key, order, properties = key_of, ordering, NO_PROPERTIES
        length, sequence, event_time, null_value, compacted_out = scanned
        offset = meta_end + length
        if length < 0 or offset > end:
            raise MalformedBatch(f"message {index}: payload of {length} bytes does not fit")
        if unacked != -1 and not (unacked >> index) & 1:
            continue
        charged += 1
        if compacted_out:
            continue
        append(new_message((
            topic, unchecked_message_id(ledger, entry, index, partition, size),
            b"" if null_value else payload[meta_end:offset], key, properties, publish_time,
            event_time or None, redeliveries, producer,
            sequence if sequence >= 0 else base_sequence + index, order, origin,
        )))  # fmt: skip
    if offset != end:
        raise MalformedBatch(f"{end - offset} bytes after the last message")
    return _new_unpacked((messages, charged, size))


# SingleMessageMetadata's varint fields :func:`_scan_single` reads (tag = field << 3):
# payload_size 3, compacted_out 4, event_time 5, sequence_id 8, null_value 9,
# null_partition_key 10 (ignored, as the protobuf path ignores it).
_PAYLOAD_SIZE, _COMPACTED_OUT, _EVENT_TIME, _SEQUENCE_ID, _NULL_VALUE = 0x18, 0x20, 0x28, 0x40, 0x48
_SCANNED_TAGS = frozenset((0x18, 0x20, 0x28, 0x40, 0x48, 0x50))


def _scan_single(data: bytes, offset: int, end: int) -> tuple[int, int, int, bool, bool] | None:
    """(payload_size, sequence_id or -1, event_time, null_value, compacted_out) of the
    SingleMessageMetadata in ``data[offset:end]``, or None if it holds anything else
    (properties, keys, an unknown or malformed field): :func:`_parse_single` reads those.

    A Python varint loop costs about what protobuf's parse does, but it leaves no message
    object whose fields are then read one by one (docs/benchmarks.md, "Per-message costs").
    """
    length, sequence, event_time, null_value, compacted_out = -1, -1, 0, False, False
    while offset < end:
        tag = data[offset]
        if tag not in _SCANNED_TAGS or offset + 1 >= end:
            return None
        byte = data[offset + 1]
        offset += 2
        value = byte
        if byte >= 0x80:
            value, shift = byte & 0x7F, 7
            while byte >= 0x80:
                if offset >= end or shift > 63:
                    return None
                byte = data[offset]
                offset += 1
                value |= (byte & 0x7F) << shift
                shift += 7
        if tag == _PAYLOAD_SIZE:
            length = value
        elif tag == _SEQUENCE_ID:
            sequence = value
        elif tag == _EVENT_TIME:
            event_time = value
        elif tag == _NULL_VALUE:
            null_value = value != 0
        elif tag == _COMPACTED_OUT:
            compacted_out = value != 0
    if length < 0:
        return None  # no payload_size: the protobuf path reports it
    return length, sequence, event_time, null_value, compacted_out


def _parse_single(data: bytes, offset: int, end: int, index: int) -> pb.SingleMessageMetadata:
    single = pb.SingleMessageMetadata()
    try:
        single.MergeFromString(data[offset:end])
    except (DecodeError, ValueError, RuntimeError) as exc:
        raise MalformedBatch(f"message {index}: metadata does not parse: {exc}") from exc
    if not single.IsInitialized():
        raise MalformedBatch(f"message {index}: metadata lacks payload_size")
    return single


def is_prior(mid: MessageId, start: MessageId, *, inclusive: bool) -> bool:
    """True if a reader starting at ``start`` must not see ``mid`` (the C++ ``isPrior``)."""
    if start.entry in (EARLIEST.entry, LATEST.entry):
        return False
    if mid.entry != start.entry:
        return mid.entry < start.entry
    if inclusive:
        return mid.batch_index < start.batch_index
    return start.batch_index < 0 or mid.batch_index <= start.batch_index
