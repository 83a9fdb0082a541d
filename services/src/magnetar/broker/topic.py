"""What producers, consumers and subscriptions need from a client connection, and what a topic is.

:class:`ClientCnx` is the slice of a ServerCnx (:mod:`.connection`) that the data plane uses to
write frames back to its client; tests may give their own. :class:`Topic` is what the service
and the connection need from a persistent or non-persistent topic.

Concurrency: everything runs on the broker's one event loop; ``write`` never blocks (frames go
into the transport's buffer) and ``drain`` waits until that buffer is below its high-water mark.
"""

from __future__ import annotations

from typing import Protocol

from magnetar.authorization import Caller
from magnetar.naming import TopicName
from magnetar.protocol.version import PeerFeatures
from magnetar.wire import pulsar_api_pb2 as pb


class ClientCnx(Protocol):
    """The connection a producer or consumer belongs to."""

    @property
    def address(self) -> str: ...

    @property
    def connection_id(self) -> int:
        """Unique per broker process: consumer ids are unique only per connection."""

    @property
    def features(self) -> PeerFeatures: ...

    @property
    def is_open(self) -> bool: ...

    @property
    def caller(self) -> Caller | None:
        """Who the client authenticated as (None without authentication)."""

    def write_command(self, command: pb.BaseCommand) -> None: ...

    def write(self, frame: bytes) -> None: ...

    def write_parts(self, head: bytes, tail: bytes) -> None:
        """Write one frame given as two parts (a MESSAGE's head and the entry's stored bytes),
        without joining them first."""
        ...

    def write_frames(self, parts: list[bytes]) -> None:
        """Write the frames whose bytes are ``parts`` joined, in order (a run of MESSAGE heads
        and stored entries), in one call; the list is the caller's no more."""
        ...

    async def drain(self) -> None: ...

    def forget_producer(self, producer_id: int) -> None:
        """The broker closed the producer (CLOSE_PRODUCER sent); drop it from the cnx."""

    def forget_consumer(self, consumer_id: int) -> None:
        """The broker closed the consumer (CLOSE_CONSUMER sent); drop it from the cnx."""


class Topic(Protocol):
    name: TopicName

    @property
    def is_open(self) -> bool: ...

    async def close(self) -> None: ...
