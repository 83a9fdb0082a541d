"""One producer on a topic: publishes SEND payloads and answers with receipts in order.

Each SEND becomes one publish task, started in frame order; a persistent topic assigns
positions in call order (``ManagedLedger.add_entry``), so entries keep the producer's order.
Receipts must reach the client in sequence order as well (the C++ client drops the connection
on a receipt ahead of its queue head), so every publish waits for its predecessor's receipt
before writing its own: a chain of futures, no reordering even when a later add completes first.

Deduplication (:mod:`.deduplication`, persistent topics only): right before its add each publish
asks the topic's :class:`~magnetar.broker.deduplication.MessageDeduplication` whether the SEND
is a duplicate. A duplicate is not stored and is answered with a receipt for message id
(-1, -1), in order like any other receipt. While the topic recovers its deduplication map,
publishes wait; a second chain (``_dispatched``: "my predecessor has called the topic") keeps
the adds in frame order even then — nothing may suspend between setting it and the add.

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

from magnetar.broker.deduplication import DupStatus, MessageDeduplication, Verdict
from magnetar.broker.stats import RateMeter
from magnetar.broker.topic import ClientCnx
from magnetar.errors import MagnetarError
from magnetar.ids import EntryId, LedgerId
from magnetar.managed_ledger import Position
from magnetar.protocol import commands
from magnetar.protocol.errors import server_error_for
from magnetar.protocol.message_id import EARLIEST, MessageId
from magnetar.telemetry import get_logger
from magnetar.wire import pulsar_api_pb2 as pb

log = get_logger(__name__)

Publish = Callable[[bytes, int], Awaitable[MessageId]]

DUPLICATE_ID = EARLIEST  # (-1, -1): Pulsar's receipt for a message it did not store again


@dataclass(frozen=True, slots=True)
class _Send:
    sequence_id: int
    highest_sequence_id: int | None
    num_messages: int
    stored: bytes


@dataclass(eq=False)
class Producer:
    cnx: ClientCnx
    producer_id: int
    name: str
    topic: str
    publish_fn: Publish
    deduplication: MessageDeduplication | None = None
    connected_since: float = field(default_factory=time.time)
    messages_in: int = 0
    bytes_in: int = 0
    rate_in: RateMeter = field(default_factory=RateMeter)
    closed: bool = False
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)
    _last: asyncio.Future[None] | None = None
    _dispatched: asyncio.Future[None] | None = None

    def publish(
        self,
        sequence_id: int,
        highest_sequence_id: int | None,
        num_messages: int,
        stored: bytes,
        on_done: Callable[[], None],
    ) -> None:
        """Start publishing one SEND (call in frame order)."""
        loop = asyncio.get_running_loop()
        previous, previous_dispatch = self._last, self._dispatched
        done: asyncio.Future[None] = loop.create_future()
        dispatched: asyncio.Future[None] = loop.create_future()
        self._last, self._dispatched = done, dispatched
        send = _Send(sequence_id, highest_sequence_id, num_messages, stored)
        task = asyncio.create_task(
            self._publish(send, previous, previous_dispatch, done, dispatched)
        )
        self._tasks.add(task)

        def finished(t: asyncio.Task[None]) -> None:
            self._tasks.discard(t)
            for future in (done, dispatched):
                if not future.done():
                    future.set_result(None)
            on_done()

        task.add_done_callback(finished)

    async def _publish(
        self,
        send: _Send,
        previous: asyncio.Future[None] | None,
        previous_dispatch: asyncio.Future[None] | None,
        done: asyncio.Future[None],
        dispatched: asyncio.Future[None],
    ) -> None:
        verdict = await self._check_duplicate(send, previous_dispatch)
        if verdict.status is not DupStatus.NOT_DUP:
            dispatched.set_result(None)
            await self._answer_duplicate(send, verdict, previous)
            done.set_result(None)
            return
        # From here to the add's FIFO slot in the managed ledger nothing may suspend.
        dispatched.set_result(None)
        try:
            message_id = await self.publish_fn(send.stored, send.num_messages)
        except MagnetarError as exc:
            self._recorded(send, verdict, None)
            if previous is not None:
                await previous
            log.warning("publish_failed", topic=self.topic, producer=self.name, error=repr(exc))
            self._send_error(send, server_error_for(exc), str(exc))
            done.set_result(None)
            return
        self._recorded(send, verdict, message_id)
        if previous is not None:
            await previous
        self.messages_in += send.num_messages
        self.bytes_in += len(send.stored)
        self.rate_in.record(send.num_messages, len(send.stored))
        self._receipt(send, message_id)
        done.set_result(None)

    # ------------------------------------------------------------------ deduplication
    async def _check_duplicate(
        self, send: _Send, previous_dispatch: asyncio.Future[None] | None
    ) -> Verdict:
        dedup = self.deduplication
        if dedup is None:
            return Verdict(DupStatus.NOT_DUP)
        if previous_dispatch is not None and not previous_dispatch.done():
            await previous_dispatch
        await dedup.wait_ready()
        return dedup.check(self.name, send.sequence_id, send.highest_sequence_id)

    def _recorded(self, send: _Send, verdict: Verdict, message_id: MessageId | None) -> None:
        if self.deduplication is None or verdict.ticket is None:
            return
        position = (
            None
            if message_id is None
            else Position(LedgerId(message_id.ledger_id), EntryId(message_id.entry_id))
        )
        self.deduplication.recorded(
            verdict, self.name, send.sequence_id, send.highest_sequence_id, position
        )

    async def _answer_duplicate(
        self, send: _Send, verdict: Verdict, previous: asyncio.Future[None] | None
    ) -> None:
        """Answer after the predecessors (the original, if in flight, is one of them)."""
        if previous is not None:
            await previous
        tracker = verdict.tracker
        if tracker is not None and tracker.is_persisted(self.name, send.sequence_id):
            log.debug("send_duplicate", topic=self.topic, producer=self.name,
                      sequence_id=send.sequence_id)  # fmt: skip
            self._receipt(send, DUPLICATE_ID)
        else:
            self._send_error(send, pb.PersistenceError, "the original of this message failed")

    # ------------------------------------------------------------------ replies
    def _receipt(self, send: _Send, message_id: MessageId) -> None:
        if self.cnx.is_open and not self.closed:
            self.cnx.write_command(
                commands.send_receipt(
                    self.producer_id,
                    send.sequence_id,
                    message_id,
                    highest_sequence_id=send.highest_sequence_id,
                )
            )

    def _send_error(self, send: _Send, code: pb.ServerError.ValueType, message: str) -> None:
        if self.cnx.is_open and not self.closed:
            self.cnx.write_command(
                commands.send_error(self.producer_id, send.sequence_id, code, message)
            )

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
