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
from collections.abc import Mapping
from dataclasses import dataclass, field

from magnetar.client.compression import decompress
from magnetar.client.dead_letter import DeadLetterPolicy
from magnetar.client.errors import InvalidConfiguration
from magnetar.client.message import Message
from magnetar.protocol.batch import is_batch, parse_batch
from magnetar.protocol.message_id import (
    EARLIEST,
    LATEST,
    MessageId,
    ack_set_to_bits,
    to_signed64,
)
from magnetar.wire import pulsar_api_pb2 as pb


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
    read_compacted: bool = False
    properties: Mapping[str, str] = field(default_factory=dict)
    subscription_properties: Mapping[str, str] = field(default_factory=dict)
    start_message_id: MessageId | None = None  # non-durable (readers) only
    start_message_id_inclusive: bool = False
    pattern_auto_discovery_period_s: float = 60.0

    def __post_init__(self) -> None:
        if self.receiver_queue_size < 1:
            raise InvalidConfiguration("receiver_queue_size must be at least 1")
        if self.ack_timeout_s < 0 or self.negative_ack_redelivery_delay_s < 0:
            raise InvalidConfiguration("timeouts and delays cannot be negative")
        if self.pattern_auto_discovery_period_s <= 0:
            raise InvalidConfiguration("pattern_auto_discovery_period_s must be positive")

    @property
    def allows_cumulative_ack(self) -> bool:
        return self.subscription_type in (SubscriptionType.EXCLUSIVE, SubscriptionType.FAILOVER)


# ---------------------------------------------------------------------- sans-I/O receive side


@dataclass
class ReceiverPermits:
    """FLOW accounting: all permits at subscribe, then refills of at least half the queue."""

    queue_size: int
    _unreported: int = 0

    @property
    def threshold(self) -> int:
        return max(1, self.queue_size // 2)

    def initial(self) -> int:
        self._unreported = 0
        return self.queue_size

    def release(self, count: int = 1) -> int:
        """``count`` messages left the queue; returns the permits to send now (0 = not yet)."""
        self._unreported += count
        if self._unreported < self.threshold:
            return 0
        out, self._unreported = self._unreported, 0
        return out


@dataclass(frozen=True)
class Unpacked:
    """One entry's messages; ``charged`` = permits the broker counted for it."""

    messages: list[Message]
    charged: int
    batch_size: int  # 0 for a single (non-batch) message


def unpack_entry(
    topic: str, command: pb.CommandMessage, metadata: pb.MessageMetadata, payload: bytes
) -> Unpacked:
    """The messages of one MESSAGE frame (decompressed; acknowledged batch indexes skipped).

    Raises DecompressionError or MalformedBatch for a payload that cannot be read.
    """
    if metadata.compression != pb.NONE:
        payload = decompress(metadata.compression, payload, metadata.uncompressed_size)
    data = command.message_id
    ledger, entry, partition = to_signed64(data.ledger_id), to_signed64(data.entry_id), -1
    if data.HasField("partition"):
        partition = data.partition
    redeliveries = command.redelivery_count
    key_of = metadata.partition_key if metadata.HasField("partition_key") else None
    ordering = metadata.ordering_key if metadata.HasField("ordering_key") else None
    if not is_batch(metadata):
        mid = MessageId(ledger, entry, partition=partition)
        message = Message(
            topic=topic,
            message_id=mid,
            data=b"" if metadata.null_value else payload,
            key=key_of,
            properties={kv.key: kv.value for kv in metadata.properties},
            publish_time_ms=metadata.publish_time,
            event_time_ms=metadata.event_time or None,
            redelivery_count=redeliveries,
            producer_name=metadata.producer_name,
            sequence_id=metadata.sequence_id,
            ordering_key=ordering,
        )
        return Unpacked([message], 1, 0)
    size = metadata.num_messages_in_batch
    items = parse_batch(payload, size)
    unacked = ((1 << size) - 1) & ack_set_to_bits(command.ack_set) if command.ack_set else -1
    messages: list[Message] = []
    charged = 0
    for index, item in enumerate(items):
        if unacked != -1 and not (unacked >> index) & 1:
            continue
        charged += 1
        single = item.metadata
        if single.compacted_out:
            continue
        messages.append(
            Message(
                topic=topic,
                message_id=MessageId(ledger, entry, index, partition, batch_size=size),
                data=b"" if single.null_value else item.payload,
                key=single.partition_key if single.HasField("partition_key") else key_of,
                properties={kv.key: kv.value for kv in single.properties},
                publish_time_ms=metadata.publish_time,
                event_time_ms=single.event_time or None,
                redelivery_count=redeliveries,
                producer_name=metadata.producer_name,
                sequence_id=(
                    single.sequence_id
                    if single.HasField("sequence_id")
                    else metadata.sequence_id + index
                ),
                ordering_key=single.ordering_key if single.HasField("ordering_key") else ordering,
            )
        )
    return Unpacked(messages, charged, size)


def is_prior(mid: MessageId, start: MessageId, *, inclusive: bool) -> bool:
    """True if a reader starting at ``start`` must not see ``mid`` (the C++ ``isPrior``)."""
    if start.entry in (EARLIEST.entry, LATEST.entry):
        return False
    if mid.entry != start.entry:
        return mid.entry < start.entry
    if inclusive:
        return mid.batch_index < start.batch_index
    return start.batch_index < 0 or mid.batch_index <= start.batch_index
