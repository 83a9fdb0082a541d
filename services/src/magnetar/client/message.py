"""What a consumer or reader hands to the application: one received message.

A frozen value built by the consumer from a MESSAGE frame (one per batch index for batches);
safe to share between tasks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from magnetar.protocol.message_id import MessageId


@dataclass(frozen=True)
class Message:
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
    ordering_key: bytes | None = field(default=None)

    def value(self) -> bytes:
        """The payload (the official client's ``Message.value()`` for bytes schemas)."""
        return self.data
