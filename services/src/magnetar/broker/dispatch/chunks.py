"""Chunk affinity for Shared subscriptions: every chunk of one chunked message goes to one consumer.

A chunked message (the official client's ``chunking_enabled``) is stored as several entries, each
with the message's ``uuid`` and its ``chunk_id`` / ``num_chunks_from_msg``. A consumer can only
rebuild the message if it receives all of them; Shared's round-robin would spread them over
the consumers and none could ever complete the message. So the Shared plan gives the first
chunk it hands out by rotation, records the consumer for the message, and sends the later
chunks to that consumer only (waiting as leftovers while it has no permits); the last chunk
releases the record. A consumer that leaves releases its records: its unacknowledged chunks
are redelivered from the first one (replays come first and in position order), so the next
consumer starts the message from the beginning. A chunk of a message with no record (its first
chunk was handed out before a restart, or never stored) goes by rotation as any entry.

Exclusive and Failover need nothing (one consumer gets everything) and Key_Shared routes by the
message key, which every chunk carries.

Pure and bounded by the number of chunked messages under way; on the subscription's loop.
"""

from __future__ import annotations

from typing import NamedTuple

from magnetar.broker.dispatch.consumers import ConsumerKey


class ChunkTag(NamedTuple):
    """Which chunked message an entry belongs to, and whether it is its last chunk."""

    message: tuple[str, str]  # (producer name, uuid)
    chunk_id: int
    last: bool


class ChunkAffinity:
    """The consumer each chunked message under way is being delivered to."""

    __slots__ = ("_by_message",)

    def __init__(self) -> None:
        self._by_message: dict[tuple[str, str], ConsumerKey] = {}

    def __len__(self) -> int:
        return len(self._by_message)

    def holder(self, tag: ChunkTag) -> ConsumerKey | None:
        return self._by_message.get(tag.message)

    def given(self, tag: ChunkTag, consumer: ConsumerKey) -> None:
        """``consumer`` was handed the chunk ``tag``: it keeps the message until its last chunk."""
        if tag.last:
            self._by_message.pop(tag.message, None)
        else:
            self._by_message[tag.message] = consumer

    def consumer_removed(self, consumer: ConsumerKey) -> None:
        for message in [m for m, c in self._by_message.items() if c == consumer]:
            del self._by_message[message]

    def clear(self) -> None:
        self._by_message.clear()
