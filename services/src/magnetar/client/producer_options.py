"""A producer's configuration and a message's send options, checked before any I/O.

:class:`ProducerOptions` holds what ``Client.create_producer`` accepts (names and defaults follow
the official clients; docs/client.md has the table); :meth:`ProducerOptions.validate` raises
InvalidConfiguration for values no producer could honour. :class:`SendOptions` types the
keywords of every ``send*`` method of :class:`~magnetar.client.producer.Producer` and
:class:`~magnetar.client.partitioned_producer.PartitionedProducer`.

Values only: frozen, no I/O, safe from any task. Built by ``client.py``; read by the producers
and, for the routing fields, by :mod:`magnetar.client.partitioned_producer`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypedDict

from magnetar.client.compression import CompressionType, compression_type
from magnetar.client.errors import InvalidConfiguration
from magnetar.client.routing import HashingScheme, RoutingMode
from magnetar.client.schema import SchemaInfo
from magnetar.wire import pulsar_api_pb2 as pb


class ProducerAccessMode(enum.StrEnum):
    """Who else may publish while this producer is connected (Pulsar's access modes).

    ``SHARED``: anyone. ``EXCLUSIVE``: creation fails (ProducerFenced) if another producer is
    connected. ``EXCLUSIVE_WITH_FENCING``: the others are fenced out and this one takes the
    topic. ``WAIT_FOR_EXCLUSIVE``: creation waits until the topic has no other producer.
    """

    SHARED = "Shared"
    EXCLUSIVE = "Exclusive"
    WAIT_FOR_EXCLUSIVE = "WaitForExclusive"
    EXCLUSIVE_WITH_FENCING = "ExclusiveWithFencing"

    @property
    def wire(self) -> pb.ProducerAccessMode.ValueType:
        return pb.ProducerAccessMode.Value(self.value)


def access_mode(value: ProducerAccessMode | str) -> ProducerAccessMode:
    """``value`` as an access mode (Pulsar's names, any case); InvalidConfiguration if none."""
    if isinstance(value, ProducerAccessMode):
        return value
    wanted = value.replace("_", "").lower()
    for mode in ProducerAccessMode:
        if mode.value.lower() == wanted:
            return mode
    names = ", ".join(m.value for m in ProducerAccessMode)
    raise InvalidConfiguration(f"access_mode must be one of {names}; got {value!r}")


class SendOptions(TypedDict, total=False):
    """What one message may carry besides its payload (every ``send*`` method's keywords).

    ``key`` and ``partition_key`` are aliases (the official clients use both names); the key
    routes the message on a partitioned topic. ``deliver_after_ms`` is relative to now,
    ``deliver_at_ms`` absolute (epoch milliseconds). ``sequence_id`` overrides the producer's
    own counter (for deduplication). A geo-replicated copy goes through
    :meth:`Producer.send_entry` with its origin's metadata instead.
    """

    key: str | None
    partition_key: str | None
    properties: Mapping[str, str] | None
    event_time_ms: int | None
    sequence_id: int | None
    ordering_key: bytes | None
    deliver_at_ms: int | None
    deliver_after_ms: int | None


@dataclass(frozen=True)
class ProducerOptions:
    """A producer's configuration; names and defaults follow the official clients."""

    producer_name: str | None = None
    initial_sequence_id: int | None = None
    send_timeout_ms: int = 30_000
    max_pending_messages: int = 1000
    block_if_queue_full: bool = True
    batching_enabled: bool = True
    batching_max_messages: int = 1000
    batching_max_bytes: int = 128 * 1024
    batching_max_publish_delay_ms: int = 10
    compression_type: CompressionType | int | str | None = CompressionType.NONE
    routing_mode: RoutingMode | str = RoutingMode.ROUND_ROBIN
    hashing_scheme: HashingScheme | str = HashingScheme.BOOST
    message_router: Callable[[str | None, int], int] | None = None
    properties: Mapping[str, str] = field(default_factory=dict)
    access_mode: ProducerAccessMode | str = ProducerAccessMode.SHARED
    chunking_enabled: bool = False
    schema: SchemaInfo | None = None  # declared in PRODUCER (magnetar.client.schema)

    def validate(self) -> None:
        if self.max_pending_messages < 1:
            raise InvalidConfiguration("max_pending_messages must be at least 1")
        if self.send_timeout_ms < 0:
            raise InvalidConfiguration("send_timeout_ms cannot be negative")
        if self.batching_max_messages < 1 or self.batching_max_bytes < 1:
            raise InvalidConfiguration("batching limits must be positive")
        if self.batching_max_publish_delay_ms < 0:
            raise InvalidConfiguration("batching_max_publish_delay_ms cannot be negative")
        compression_type(self.compression_type)
        access_mode(self.access_mode)
        if self.chunking_enabled and self.batching_enabled:
            raise InvalidConfiguration(
                "chunking_enabled needs batching_enabled=False (a batch is never chunked)"
            )
