"""One producer on a topic: publishes SEND payloads and answers with receipts in order.

SENDs are handled in frame order; a persistent topic assigns positions in call order
(``ManagedLedger.add_entry``), so entries keep the producer's order. Receipts must reach the
client in sequence order as well (the C++ client drops the connection on a receipt ahead of its
queue head): every SEND gets a slot in ``_pending`` (a FIFO in frame order) and replies are
written only from its head, once the head's outcome is known — no reordering even when a later
add completes first (Pulsar's pending-acks queue).

Fast path (no task): when the topic offers ``publish_nowait`` (persistent topics), nothing
earlier is still waiting to be dispatched and deduplication is not recovering, the SEND is
checked for duplicates and handed to the managed ledger synchronously; the ledger's done
callback records the outcome. Otherwise (a non-persistent topic, the ledger's add slots full,
deduplication recovering) the SEND goes to a publish task. A chain of futures
(``_dispatched``: "my predecessor has called the topic") keeps the adds in frame order across
both paths: the fast path is taken only when the last task has dispatched, and a task
dispatches only after its predecessor did — nothing may suspend between that and the add.

Runs (:meth:`Producer.publish_frames`): the SENDs of one socket read take their add slots at
once, then each gets its duplicate check and the topic's checks in frame order, and the
accepted ones reach the managed ledger in one call (one queueing, one dispatch pass) and come
back as a run too (one callback per stretch of durable entries, recorded and answered with one
walk of the queue's head); what found no slot, or a run when the fast path is closed, goes
SEND by SEND as above.

Deduplication (:mod:`.deduplication`, persistent topics only): right before its add each SEND
asks the topic's :class:`~magnetar.broker.deduplication.MessageDeduplication` whether it is a
duplicate. A duplicate is not stored and is answered (in order, when it reaches the head) with a
receipt for message id (-1, -1) if its original was persisted, SEND_ERROR(PersistenceError)
otherwise. Every add's outcome is recorded with the deduplication even after the producer closed.

A receipt is written only after the entry is durable. A failed publish answers SEND_ERROR with
the error's ServerError code; the C++ client then reconnects and resends what was not
acknowledged. One refused because its topic is closing (TopicClosed) is not answered, as in
Pulsar: the close tells the client with CLOSE_PRODUCER, and the client resends it.

Concurrency: on the broker's loop. The producer owns its publish tasks and cancels them on
close; ``sends_done`` (the connection's pending-send slots) is told of every SEND once, a
stretch of answered ones at a time.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from magnetar.broker.deduplication import (
    DupStatus,
    MessageDeduplication,
    Status,
    Verdict,
)
from magnetar.broker.errors import TopicClosed
from magnetar.broker.replication.names import is_replicator
from magnetar.broker.sends import (
    Origin,
    Send,
    Stored,
    mark_stored,
    pop_stored,
    run_columns,
    sends_of,
)
from magnetar.broker.stats import RateMeter
from magnetar.broker.topic import ClientCnx
from magnetar.errors import MagnetarError
from magnetar.ids import EntryId, LedgerId
from magnetar.managed_ledger import Position
from magnetar.protocol import commands
from magnetar.protocol.errors import server_error_for
from magnetar.protocol.hand_decoded import SendFrame
from magnetar.protocol.hand_encoded import send_receipt_frame, send_receipt_frames
from magnetar.protocol.message_id import EARLIEST, MessageId
from magnetar.tasks import TaskSet
from magnetar.telemetry import get_logger
from magnetar.wire import pulsar_api_pb2 as pb

log = get_logger(__name__)

Publish = Callable[[bytes, int], Awaitable[MessageId]]
Published = Callable[[Stored | None, BaseException | None], None]
# stored, count, done, facts, crc32c(stored) (or -1)
PublishNowait = Callable[[bytes, int, Published, object, int], bool]
# A run's outcome (GroupPublisher.publish_run): (index, positions, None) for the durable
# entries index.. of the run, (index, None, error) for a failed one.
RunPublished = Callable[[int, "list[Position] | None", "BaseException | None"], None]


class GroupPublisher(Protocol):
    """A topic's publish path for a run of SENDs (persistent topics): slots for the run, the
    per-entry checks, then the run's adds in one call (:meth:`Producer.publish_frames`)."""

    def reserve_publish(self, count: int) -> int: ...

    def publish_check(self) -> Callable[[bytes], None] | None: ...

    def publish_run(
        self,
        stored: list[bytes],
        num_messages: list[int],
        on_added: RunPublished,
        unused: int,
        facts: list[object] | None = None,
        stored_crcs: list[int] | None = None,
    ) -> None: ...


DUPLICATE_ID = EARLIEST  # (-1, -1): Pulsar's receipt for a message it did not store again


@dataclass(eq=False)
class Producer:
    cnx: ClientCnx
    producer_id: int
    name: str
    topic: str
    publish_fn: Publish
    deduplication: MessageDeduplication | None = None
    publish_nowait: PublishNowait | None = None
    group_publisher: GroupPublisher | None = None  # with publish_nowait: runs of SENDs
    # Told how many SENDs were answered (or dropped at close), each SEND once: the
    # connection's pending-send slots.
    sends_done: Callable[[int], None] = field(default=lambda count: None)
    connected_since: float = field(default_factory=time.time)
    topic_epoch: int | None = None  # reported in PRODUCER_SUCCESS (access modes)
    schema_version: bytes = b""  # reported in PRODUCER_SUCCESS; empty: no schema
    messages_in: int = 0
    bytes_in: int = 0
    rate_in: RateMeter = field(default_factory=RateMeter)
    closed: bool = False
    _tasks: TaskSet = field(default_factory=lambda: TaskSet("publish"))
    _pending: collections.deque[Send] = field(default_factory=collections.deque)
    _dispatched: asyncio.Future[None] | None = None
    _idle: asyncio.Future[None] | None = None
    is_replicator: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        # A remote cluster's replicator (``pulsar.repl.{cluster}``): read on every SEND.
        self.is_replicator = is_replicator(self.name)

    def publish_frames(self, frames: Sequence[SendFrame]) -> None:
        """Start publishing a run of SENDs (in frame order; one or more).

        On the fast path a run of more than one takes its add slots at once, then each SEND
        in order gets its deduplication verdict and the topic's checks (a duplicate or a
        refused one is finished there), and the accepted ones go to the topic in one call:
        one slot step and one dispatch pass for the run. SENDs without a slot, and every SEND
        when the fast path is not open, go one by one (:meth:`_publish_one`). A replicator's
        SEND is deduplicated by the producer name and sequence ids of the message's metadata
        instead of this producer's (Pulsar's replicated messages)."""
        origins = [_origin(frame.metadata) for frame in frames] if self.is_replicator else None
        runs = sends_of(frames, origins)  # one compiled loop
        group = self.group_publisher
        reserved = 0
        if (
            len(runs) > 1
            and group is not None
            and self.publish_nowait is not None
            and self._fast_path_open()
        ):
            try:
                reserved = group.reserve_publish(len(runs))
            except MagnetarError:
                reserved = 0  # each SEND below meets the error on its own, as it would have
        if group is not None and reserved:
            self._publish_reserved(group, runs[:reserved], reserved)
        for send in runs[reserved:]:
            self._publish_one(send)

    def _publish_reserved(self, group: GroupPublisher, sends: list[Send], slots: int) -> None:
        """The fast path of :meth:`publish_frames` for ``sends``, which hold ``slots`` slots:
        the accepted ones go as one run whose outcomes come back per confirmed stretch."""
        pending = self._pending
        check = group.publish_check()
        if check is None and not self._deduplicating():
            # Nothing to decide per SEND (the usual run): all of them go, with no call each.
            pending.extend(sends)
            accepted = sends
        else:
            accepted = []
            for send in sends:
                pending.append(send)
                if self._duplicate(send):
                    continue
                try:
                    if check is not None:
                        check(send.stored)
                except MagnetarError as exc:
                    self._added(send, None, exc)
                    continue
                accepted.append(send)
        # The checksums go along when the first SEND has one (a run of big SENDs).
        stored, counts, facts, crcs = run_columns(accepted)  # one compiled loop
        group.publish_run(
            stored, counts, functools.partial(self._run_added, accepted),
            slots - len(accepted), facts, crcs,
        )  # fmt: skip

    def _run_added(
        self,
        sends: list[Send],
        index: int,
        positions: list[Position] | None,
        error: BaseException | None,
    ) -> None:
        """Outcomes of a run's adds (see :data:`RunPublished`): a stretch of durable ones is
        recorded and answered with one walk of the head of the queue."""
        if positions is None:
            self._added(sends[index], None, error)
            return
        if self.deduplication is not None:
            for send, position in zip(sends[index:], positions, strict=False):
                if send.verdict.ticket is not None:
                    self._recorded(send, position)
        mark_stored(sends, index, positions)  # one compiled loop (it checks the lengths)
        self._answer_head()

    def _publish_one(self, send: Send) -> None:
        self._pending.append(send)
        nowait = self.publish_nowait
        if nowait is not None and self._fast_path_open():
            if self._duplicate(send):
                return
            try:
                added = functools.partial(self._added, send)
                if nowait(send.stored, send.num_messages, added, send.facts, send.stored_crc):
                    return
            except MagnetarError as exc:
                self._added(send, None, exc)
                return
            self._start_task(send, None, checked=True)  # no free add slot: wait in a task
            return
        self._start_task(send, self._dispatched, checked=False)

    def _fast_path_open(self) -> bool:
        """Whether a SEND may be checked and added now, without a task: no earlier SEND is
        still on its way to the add queue, and deduplication is not recovering."""
        previous = self._dispatched
        dedup = self.deduplication
        return (previous is None or previous.done()) and (
            dedup is None or dedup.status is not Status.RECOVERING
        )

    def _deduplicating(self) -> bool:
        """Whether :meth:`_duplicate` gives SENDs a verdict now (else it returns False and the
        verdict stays NOT_TRACKED, what check() would give)."""
        dedup = self.deduplication
        return dedup is not None and dedup.status is Status.ENABLED

    def _duplicate(self, send: Send) -> bool:
        """Give ``send`` its deduplication verdict (on the fast path); a duplicate is finished
        here (answered in order) and True is returned."""
        if not self._deduplicating():
            return False
        dedup = self.deduplication
        assert dedup is not None  # (what _deduplicating found)
        send.verdict = dedup.check(*self._key(send), send.chunk)
        if send.verdict.status is DupStatus.NOT_DUP:
            return False
        self._finish(send)
        return True

    def _start_task(
        self, send: Send, previous_dispatch: asyncio.Future[None] | None, *, checked: bool
    ) -> None:
        dispatched: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._dispatched = dispatched
        self._tasks.spawn(self._publish(send, previous_dispatch, dispatched, checked))

    async def _publish(
        self,
        send: Send,
        previous_dispatch: asyncio.Future[None] | None,
        dispatched: asyncio.Future[None],
        checked: bool,
    ) -> None:
        try:
            if not checked:
                send.verdict = await self._check_duplicate(send, previous_dispatch)
                if send.verdict.status is not DupStatus.NOT_DUP:
                    return
            # From here to the add's FIFO slot in the managed ledger nothing may suspend.
            dispatched.set_result(None)
            try:
                message_id = await self.publish_fn(send.stored, send.num_messages)
            except MagnetarError as exc:
                self._added(send, None, exc)
                return
            self._added(send, message_id, None)
        finally:
            if not dispatched.done():
                dispatched.set_result(None)
            if not send.finished:  # a duplicate, or cancelled by close
                self._finish(send)

    def _added(self, send: Send, message_id: Stored | None, exc: BaseException | None) -> None:
        """An add's outcome, from either path (the fast path's done callback, or the task)."""
        self._recorded(send, message_id)
        if isinstance(exc, MagnetarError):
            send.error = exc
        elif exc is not None:
            log.warning("publish_aborted", topic=self.topic, producer=self.name, error=repr(exc))
        send.message_id = message_id
        self._finish(send)

    def _finish(self, send: Send) -> None:
        """``send``'s outcome is known: answer every finished SEND at the head, in order."""
        send.finished = True
        self._answer_head()

    def _answer_head(self) -> None:
        """Answer every finished SEND at the head of the queue, in order. A stretch of stored
        ones is answered together (:meth:`_answer_stored`: one write, counted once), since a
        confirmed run finishes many at a time."""
        pending = self._pending
        while True:
            stored, messages, size = pop_stored(pending)  # one compiled loop
            self._answer_stored(stored, messages, size)
            if not pending or not pending[0].finished:
                break
            head = pending.popleft()  # a duplicate or a failure
            try:
                self._answer(head)
            finally:
                self.sends_done(1)
        if not pending and self._idle is not None:
            if not self._idle.done():
                self._idle.set_result(None)
            self._idle = None

    def _answer_stored(self, sends: list[Send], messages: int, size: int) -> None:
        """Count the stored ``sends`` (``messages`` in ``size`` bytes) and write their
        receipts in one write."""
        if not sends:
            return
        try:
            self.messages_in += messages
            self.bytes_in += size
            self.rate_in.record(messages, size)
            if self.cnx.is_open and not self.closed:
                # One buffer of receipts, encoded in one compiled call (pop_stored takes only
                # stored SENDs, so each has a message id).
                self.cnx.write(send_receipt_frames(self.producer_id, sends))
        finally:
            self.sends_done(len(sends))

    def _answer(self, send: Send) -> None:
        """Answer a SEND that was not simply stored (those :meth:`_answer_head` answers): a
        duplicate or a failure. One with neither an outcome nor an error (cancelled by a
        close) gets no answer."""
        if send.verdict.status is not DupStatus.NOT_DUP:
            self._answer_duplicate(send)
        elif isinstance(send.error, TopicClosed):
            pass  # as Pulsar: the topic's close tells the client (CLOSE_PRODUCER); it resends
        elif send.error is not None:
            log.warning("publish_failed", topic=self.topic, producer=self.name,
                        error=repr(send.error))  # fmt: skip
            self._send_error(send, server_error_for(send.error), str(send.error))

    # ------------------------------------------------------------------ deduplication
    async def _check_duplicate(
        self, send: Send, previous_dispatch: asyncio.Future[None] | None
    ) -> Verdict:
        dedup = self.deduplication
        if dedup is None:
            return Verdict(DupStatus.NOT_DUP)
        if previous_dispatch is not None and not previous_dispatch.done():
            await previous_dispatch
        await dedup.wait_ready()
        return dedup.check(*self._key(send), send.chunk)

    def _key(self, send: Send) -> Origin:
        """Who deduplication files ``send`` under: its origin, else this producer."""
        if send.origin is not None:
            return send.origin
        return self.name, send.sequence_id, send.highest_sequence_id

    def _recorded(self, send: Send, message_id: Stored | None) -> None:
        verdict = send.verdict
        if self.deduplication is None or verdict.ticket is None:
            return
        position = (
            message_id
            if message_id is None or isinstance(message_id, Position)
            else Position(LedgerId(message_id.ledger_id), EntryId(message_id.entry_id))
        )
        self.deduplication.recorded(verdict, *self._key(send), position, send.chunk)

    def _answer_duplicate(self, send: Send) -> None:
        """Called at the head of the queue: the original, if it was in flight, has finished."""
        tracker = send.verdict.tracker
        name, sequence_id, _highest = self._key(send)
        if tracker is not None and tracker.is_persisted(name, sequence_id, send.chunk):
            log.debug("send_duplicate", topic=self.topic, producer=self.name,
                      sequence_id=send.sequence_id)  # fmt: skip
            self._receipt(send, DUPLICATE_ID)
        else:
            self._send_error(send, pb.PersistenceError, "the original of this message failed")

    # ------------------------------------------------------------------ replies
    def _receipt(self, send: Send, message_id: Stored) -> None:
        if self.cnx.is_open and not self.closed:
            self.cnx.write(
                send_receipt_frame(
                    self.producer_id,
                    send.sequence_id,
                    message_id.ledger_id,
                    message_id.entry_id,
                    send.highest_sequence_id,
                )
            )

    def _send_error(self, send: Send, code: pb.ServerError.ValueType, message: str) -> None:
        if self.cnx.is_open and not self.closed:
            self.cnx.write_command(
                commands.send_error(self.producer_id, send.sequence_id, code, message)
            )

    @property
    def pending(self) -> int:
        return len(self._pending)

    async def flush(self, timeout_s: float) -> None:
        """Wait (bounded) for the publishes in flight."""
        if not self._pending:
            return
        if self._idle is None:
            self._idle = asyncio.get_running_loop().create_future()
        await asyncio.wait([self._idle], timeout=timeout_s)

    async def close(self, drain_s: float = 2.0) -> None:
        await self.flush(drain_s)
        self.closed = True
        await self._tasks.close()
        # Adds still in the managed ledger finish later (and are recorded for deduplication);
        # their SENDs get no answer, and their connection slots are released now.
        pending, self._pending = self._pending, collections.deque()
        if pending:
            self.sends_done(len(pending))

    def close_by_broker(self) -> None:
        """Tell the client to reconnect this producer (CLOSE_PRODUCER with request id -1)."""
        self.closed = True
        if self.cnx.is_open:
            self.cnx.write_command(commands.close_producer(self.producer_id))
            self.cnx.forget_producer(self.producer_id)


def _origin(metadata: pb.MessageMetadata) -> Origin | None:
    """A replicated entry's deduplication key: its original producer and sequence ids (Pulsar's
    MessageDeduplication for ``pulsar.repl.*`` producers). None for a producer name that is not
    UTF-8 (protobuf hands such a string field over as bytes): deduplicated by the replicator's
    own ids then."""
    sequence_id = metadata.sequence_id
    name: object = metadata.producer_name
    if not isinstance(name, str):
        return None
    return name, sequence_id, max(metadata.highest_sequence_id, sequence_id)
