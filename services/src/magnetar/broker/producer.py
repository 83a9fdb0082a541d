"""One producer on a topic: publishes SEND payloads and answers with receipts in order.

Each SEND becomes one publish task, started in frame order; a persistent topic assigns
positions in call order (``ManagedLedger.add_entry``), so entries keep the producer's order.
Receipts must reach the client in sequence order as well (the C++ client drops the connection
on a receipt ahead of its queue head), so every publish waits for its predecessor's receipt
before writing its own: a chain of futures, no reordering even when a later add completes first.

A failed publish answers SEND_ERROR with the error's ServerError code; the C++ client then
reconnects and resends what was not acknowledged.

Concurrency: on the broker's loop. The producer owns its publish tasks and cancels them on
close; ``on_done`` (the connection's pending-send slot) is called once per publish.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from magnetar.broker.stats import RateMeter
from magnetar.broker.topic import ClientCnx
from magnetar.errors import MagnetarError
from magnetar.protocol import commands
from magnetar.protocol.errors import server_error_for
from magnetar.protocol.message_id import MessageId
from magnetar.telemetry import get_logger

log = get_logger(__name__)

Publish = Callable[[bytes, int], Awaitable[MessageId]]


@dataclass(eq=False)
class Producer:
    cnx: ClientCnx
    producer_id: int
    name: str
    topic: str
    publish_fn: Publish
    connected_since: float = field(default_factory=time.time)
    messages_in: int = 0
    bytes_in: int = 0
    rate_in: RateMeter = field(default_factory=RateMeter)
    closed: bool = False
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)
    _last: asyncio.Future[None] | None = None

    def publish(
        self,
        sequence_id: int,
        highest_sequence_id: int | None,
        num_messages: int,
        stored: bytes,
        on_done: Callable[[], None],
    ) -> None:
        """Start publishing one SEND (call in frame order)."""
        previous = self._last
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._last = done
        task = asyncio.create_task(
            self._publish(sequence_id, highest_sequence_id, num_messages, stored, previous, done)
        )
        self._tasks.add(task)

        def finished(t: asyncio.Task[None]) -> None:
            self._tasks.discard(t)
            if not done.done():
                done.set_result(None)
            on_done()

        task.add_done_callback(finished)

    async def _publish(
        self,
        sequence_id: int,
        highest_sequence_id: int | None,
        num_messages: int,
        stored: bytes,
        previous: asyncio.Future[None] | None,
        done: asyncio.Future[None],
    ) -> None:
        try:
            message_id = await self.publish_fn(stored, num_messages)
        except MagnetarError as exc:
            if previous is not None:
                await previous
            log.warning("publish_failed", topic=self.topic, producer=self.name, error=repr(exc))
            if self.cnx.is_open and not self.closed:
                self.cnx.write_command(
                    commands.send_error(
                        self.producer_id, sequence_id, server_error_for(exc), str(exc)
                    )
                )
            done.set_result(None)
            return
        if previous is not None:
            await previous
        self.messages_in += num_messages
        self.bytes_in += len(stored)
        self.rate_in.record(num_messages, len(stored))
        if self.cnx.is_open and not self.closed:
            self.cnx.write_command(
                commands.send_receipt(
                    self.producer_id,
                    sequence_id,
                    message_id,
                    highest_sequence_id=highest_sequence_id,
                )
            )
        done.set_result(None)

    @property
    def pending(self) -> int:
        return len(self._tasks)

    async def flush(self, timeout_s: float) -> None:
        """Wait (bounded) for the publishes in flight."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout_s)

    async def close(self, drain_s: float = 2.0) -> None:
        await self.flush(drain_s)
        self.closed = True
        tasks = set(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)

    def close_by_broker(self) -> None:
        """Tell the client to reconnect this producer (CLOSE_PRODUCER with request id -1)."""
        self.closed = True
        if self.cnx.is_open:
            self.cnx.write_command(commands.close_producer(self.producer_id))
            self.cnx.forget_producer(self.producer_id)
