"""One consumer of a subscription: its permits, the entries it holds unacked, MESSAGE frames.

Permits (FLOW) count messages: an entry holding a batch of n messages uses n permits, less the
indexes already acknowledged (ack set). What the consumer holds unacknowledged is tracked by its
subscription (``dispatch.PendingAcks``); ``unacked_messages`` asks it.

Concurrency: owned by its subscription on the broker's loop; :meth:`deliver` only writes to the
connection's buffer (the subscription's dispatcher drains).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

from magnetar.broker.dispatch import ConsumerInfo, ConsumerKey, KeySharedMeta
from magnetar.broker.stats import RateMeter
from magnetar.broker.topic import ClientCnx
from magnetar.managed_ledger.position import Position
from magnetar.protocol import commands
from magnetar.protocol.frame import strip_checksum
from magnetar.protocol.hand_encoded import message_frame_head, message_frames
from magnetar.protocol.version import V_END_OF_TOPIC
from magnetar.wire import pulsar_api_pb2 as pb

SubType: TypeAlias = pb.CommandSubscribe.SubType.ValueType


@dataclass(eq=False)
class Consumer:
    cnx: ClientCnx
    consumer_id: int
    name: str
    subscription: str
    sub_type: SubType
    partition: int = -1
    priority: int = 0
    read_compacted: bool = False
    key_shared: KeySharedMeta | None = None
    permits: int = 0
    epoch: int | None = None
    unacked_counter: Callable[[], int] = lambda: 0
    connected_since: float = field(default_factory=time.time)
    messages_out: int = 0
    bytes_out: int = 0
    rate_out: RateMeter = field(default_factory=RateMeter)
    rate_redeliver: RateMeter = field(default_factory=RateMeter)
    closed: bool = False
    end_of_topic_sent: bool = False

    @property
    def key(self) -> ConsumerKey:
        return (self.cnx.connection_id, self.consumer_id)

    @property
    def info(self) -> ConsumerInfo:
        return ConsumerInfo(
            self.consumer_id, self.name, self.priority, self.cnx.connection_id, self.key_shared
        )

    @property
    def unacked_messages(self) -> int:
        return self.unacked_counter()

    def deliver(
        self,
        pos: Position,
        stored: bytes,
        messages: int,
        *,
        redelivery_count: int = 0,
        ack_set: list[int] | None = None,
    ) -> None:
        """Write one MESSAGE frame for the entry at ``pos`` (stored bytes replayed unchanged)."""
        self.write_message(pos, stored, redelivery_count=redelivery_count, ack_set=ack_set)
        self.delivered(messages, len(stored))

    def write_message(
        self,
        pos: Position,
        stored: bytes,
        *,
        redelivery_count: int = 0,
        ack_set: list[int] | None = None,
    ) -> None:
        """The MESSAGE frame of :meth:`deliver` only; the caller then charges :meth:`delivered`
        (a dispatch step charges each consumer once for all the entries it sent it)."""
        data = stored if self.cnx.features.wants_checksum_on_message else strip_checksum(stored)
        # Written by hand (the same bytes as commands.message + encode_message, without building
        # a MessageId and a protobuf command per entry).
        self.cnx.write_parts(
            message_frame_head(
                self.consumer_id,
                pos.ledger_id,
                pos.entry_id,
                self.partition,
                len(data),
                redelivery_count=redelivery_count,
                ack_set=ack_set,
                consumer_epoch=self.epoch,
            ),
            data,
        )

    def write_messages(
        self,
        positions: Sequence[Position],
        stored: Sequence[bytes],
        redelivery_counts: Sequence[int] | None = None,
        ack_sets: Sequence[list[int] | None] | None = None,
    ) -> None:
        """:meth:`write_message` for a run of entries (parallel lists; None: no redelivery
        count / no ack set for any of them), queued on the connection in one call; the
        caller then charges :meth:`delivered` once for the run."""
        strip = not self.cnx.features.wants_checksum_on_message
        consumer_id, partition, epoch = self.consumer_id, self.partition, self.epoch
        if redelivery_counts is None and ack_sets is None and not strip:  # the common run
            self.cnx.write_frames(message_frames(consumer_id, partition, epoch, positions, stored))
            return
        parts: list[bytes] = []
        append = parts.append
        for i in range(len(positions)):
            pos = positions[i]
            data = strip_checksum(stored[i]) if strip else stored[i]
            if redelivery_counts is None and ack_sets is None:
                head = message_frame_head(
                    consumer_id, pos[0], pos[1], partition, len(data), consumer_epoch=epoch
                )
            else:
                head = message_frame_head(
                    consumer_id,
                    pos[0],
                    pos[1],
                    partition,
                    len(data),
                    redelivery_count=redelivery_counts[i] if redelivery_counts else 0,
                    ack_set=ack_sets[i] if ack_sets else None,
                    consumer_epoch=epoch,
                )
            append(head)
            append(data)
        self.cnx.write_frames(parts)

    def delivered(self, messages: int, size: int) -> None:
        """Charge permits and count ``messages`` messages of ``size`` stored bytes sent."""
        self.permits -= messages
        self.messages_out += messages
        self.bytes_out += size
        self.rate_out.record(messages, size)

    def reached_end_of_topic(self) -> None:
        """The topic is terminated and this consumer has had everything: REACHED_END_OF_TOPIC,
        once, to clients that handle it (C++-based clients drop the connection on it)."""
        if self.end_of_topic_sent:
            return
        self.end_of_topic_sent = True
        features = self.cnx.features
        if self.cnx.is_open and features.at_least(V_END_OF_TOPIC) and not features.is_cpp_client:
            self.cnx.write_command(commands.reached_end_of_topic(self.consumer_id))

    def close_by_broker(self) -> None:
        """Tell the client to resubscribe (CLOSE_CONSUMER with request id -1)."""
        self.closed = True
        if self.cnx.is_open:
            self.cnx.write_command(commands.close_consumer(self.consumer_id))
            self.cnx.forget_consumer(self.consumer_id)
