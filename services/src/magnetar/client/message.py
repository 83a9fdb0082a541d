"""What a consumer or reader hands to the application: one received message.

An immutable value built by the consumer from a MESSAGE frame (one per batch index for
batches); safe to share between tasks.

Why a NamedTuple and not a frozen dataclass: one is built per received message (a 1000-message
batch makes 1000), and a frozen dataclass of eleven fields costs an ``object.__setattr__`` per
field (docs/benchmarks.md, "Per-message costs"); a tuple is built in one call
(:data:`new_message`, the receive path's constructor, takes the fields positionally). The
fields and keyword constructor are the dataclass's; ``properties`` of a message without
properties is one shared read-only mapping.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from types import MappingProxyType
from typing import Any, NamedTuple, cast

from magnetar.protocol.message_id import MessageId

NO_PROPERTIES: Mapping[str, str] = MappingProxyType({})


class Message(NamedTuple):
    """One message as received; ``topic`` includes ``-partition-N`` on partitioned topics."""

    topic: str
    message_id: MessageId
    data: bytes
    key: str | None
    properties: Mapping[str, str]
    publish_time_ms: int
    event_time_ms: int | None
    redelivery_count: int
    producer_name: str
    sequence_id: int
    ordering_key: bytes | None = None
    replicated_from: str | None = None  # the origin cluster of a geo-replicated copy

    def value(self) -> bytes:
        """The payload (the official client's ``Message.value()`` for bytes schemas)."""
        return self.data


# ``new_message((topic, message_id, data, key, properties, publish_time_ms, event_time_ms,
# redelivery_count, producer_name, sequence_id, ordering_key, replicated_from))``: all twelve
# fields, in order
# (not checked), built in C without the keyword constructor's Python frame.
new_message: Callable[[tuple[Any, ...]], Message] = cast(
    Callable[[tuple[Any, ...]], Message], partial(tuple.__new__, Message)
)


def entry_id_of(mid: MessageId) -> MessageId:
    """The whole-entry id of ``mid`` (no batch index), keeping the partition: what acks,
    negative acks, ack timeouts and dead-lettering track. ``mid`` itself when it is one
    already (ids are immutable; an unbatched message makes no new id)."""
    if mid.batch_index < 0 and mid.batch_size == 0:
        return mid
    return MessageId(mid.ledger_id, mid.entry_id, partition=mid.partition)
