"""Consumers of a subscription as the dispatch cores see them, and FLOW permit accounting.

Values:

* :class:`SubType` and :class:`KeySharedMode` carry the wire numbers of
  ``CommandSubscribe.SubType`` and ``KeySharedMode`` (``SubType(cmd.subType)`` converts).
* :class:`HashRange` is one ``IntRange{start, end}`` of ``KeySharedMeta.hashRanges``: both bounds
  inclusive, within ``0..65535``.
* :class:`ConsumerInfo` is what SUBSCRIBE told us about a consumer: id, name, priority level,
  the connection it came on, and its Key_Shared meta. ``consumer_id`` is only unique per
  connection, so a consumer's identity inside a subscription is :attr:`ConsumerInfo.key`
  ``(connection_id, consumer_id)``; every core here takes and returns those keys.

Permits — the rule (Pulsar's ``Consumer.sendMessages``):

* FLOW(n) adds ``n`` permits, counted in **messages**.
* An entry may be sent to a consumer whose permits are **> 0**, whatever its message count; it
  then costs its message count (less the indexes already acked when a batch is redelivered with
  an ack set). A batch may therefore drive permits below zero, by at most ``batch size - 1``;
  a consumer at ``<= 0`` gets nothing until FLOWs lift it above zero again. This is what Pulsar
  does and what its clients expect (a client never splits a batch over FLOWs).
* So the messages sent since the last FLOW never exceed ``permits + largest batch - 1``.

:class:`Permits` is the one mutable piece here: owned by the subscription's task; drive it as::

    permits = Permits()
    permits.flow(cmd.messagePermits)                 # on FLOW
    if permits.can_dispatch: ...                     # before handing an entry over
    permits.consume(entry_messages)                  # after sending MESSAGE
    permits.restore(entry_messages)                  # the send failed after consume()

Pure values otherwise; not thread-safe, no awaits.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from magnetar.broker.dispatch.sticky_key import RANGE_SIZE

ConsumerKey = tuple[int, int]
"""(connection_id, consumer_id): a consumer's identity inside one subscription."""


class SubType(IntEnum):
    """Subscription types, numbered as on the wire (``CommandSubscribe.SubType``)."""

    EXCLUSIVE = 0
    SHARED = 1
    FAILOVER = 2
    KEY_SHARED = 3


class KeySharedMode(IntEnum):
    """Key_Shared modes, numbered as on the wire (``KeySharedMode``)."""

    AUTO_SPLIT = 0
    STICKY = 1


@dataclass(frozen=True, slots=True, order=True)
class HashRange:
    """An inclusive range of sticky-key hash slots (``IntRange``)."""

    start: int
    end: int

    def is_valid(self) -> bool:
        return 0 <= self.start <= self.end < RANGE_SIZE

    def overlaps(self, other: HashRange) -> bool:
        return self.start <= other.end and other.start <= self.end

    def __contains__(self, slot: object) -> bool:
        return isinstance(slot, int) and self.start <= slot <= self.end

    def __str__(self) -> str:
        return f"[{self.start}, {self.end}]"


@dataclass(frozen=True, slots=True)
class KeySharedMeta:
    """``KeySharedMeta`` of SUBSCRIBE: mode, explicit ranges (STICKY), out-of-order allowed."""

    mode: KeySharedMode = KeySharedMode.AUTO_SPLIT
    hash_ranges: tuple[HashRange, ...] = ()
    allow_out_of_order_delivery: bool = False


@dataclass(frozen=True, slots=True)
class ConsumerInfo:
    """One consumer of a subscription, as SUBSCRIBE described it."""

    consumer_id: int
    name: str
    priority_level: int = 0
    connection_id: int = 0
    key_shared: KeySharedMeta | None = None

    @property
    def key(self) -> ConsumerKey:
        return (self.connection_id, self.consumer_id)


class Permits:
    """FLOW permits of one consumer, counted in messages (see the module docstring)."""

    __slots__ = ("_available",)

    def __init__(self, initial: int = 0) -> None:
        self._available = initial

    @property
    def available(self) -> int:
        """Permits left; negative after a batch larger than the remaining permits."""
        return self._available

    @property
    def can_dispatch(self) -> bool:
        """Whether one more entry (of any size) may be sent now."""
        return self._available > 0

    def flow(self, messages: int) -> None:
        """Add the permits of a FLOW command."""
        if messages < 0:
            raise ValueError(f"FLOW permits must not be negative, got {messages}")
        self._available += messages

    def consume(self, messages: int) -> None:
        """Charge one dispatched entry of ``messages`` messages (unacked indexes only)."""
        if messages < 0:
            raise ValueError(f"an entry cannot hold {messages} messages")
        self._available -= messages

    def restore(self, messages: int) -> None:
        """Give permits back for an entry that was planned but could not be sent."""
        self._available += messages

    def reset(self) -> None:
        """Forget all permits (e.g. the consumer's connection is gone)."""
        self._available = 0

    def __repr__(self) -> str:
        return f"Permits({self._available})"
