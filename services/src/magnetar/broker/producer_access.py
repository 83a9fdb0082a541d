"""Producer access modes and the topic epoch (Pulsar's PIP-68 "exclusive producer").

A PRODUCER names an access mode: ``Shared`` (any number of producers), ``Exclusive`` (fails if
any producer is connected), ``ExclusiveWithFencing`` (closes every other producer and takes the
topic), ``WaitForExclusive`` (queued until the topic has no producer). Each grant of exclusive
access moves the *topic epoch* forward (-1 + 1 = 0 for the first) or sets it to the epoch the
producer asks for (a reconnect of the exclusive producer); a producer whose epoch is older
than the topic's is fenced: another exclusive producer held the topic in between. The epoch
is persisted by the topic (``persist_epoch``) before the grant completes, so it survives a
restart; Shared producers only report it.

Pulsar's answers, which clients act on:

* Shared while an exclusive producer holds the topic or one waits: ``ProducerBusy``;
* Exclusive while any producer is connected or waits: ``ProducerFenced``;
* any exclusive mode with a topic epoch older than the topic's: ``ProducerFenced``;
* WaitForExclusive while producers are connected: queued (PRODUCER_SUCCESS with
  ``producer_ready=false`` first, the real one when granted, in arrival order);
* ExclusiveWithFencing: the connected producers are closed (CLOSE_PRODUCER; on reconnect their
  older epoch fences them) and the waiting ones fail with ``ProducerFenced``.

Invariants: at most one exclusive holder; a waiter is granted only when no producer is
connected (Pulsar promotes only after an exclusive holder leaves, and so strands a waiter
behind Shared producers; here the last producer to leave promotes); the epoch never decreases.

Concurrency: on the broker's loop. :class:`ProducerAccess` belongs to one topic, which calls
:meth:`ProducerAccess.admit` from the PRODUCER request's task and :meth:`ProducerAccess.released`
when a producer leaves; between a decision and its persisted epoch the grant is reserved, so a
concurrent request sees the holder.
"""

from __future__ import annotations

import asyncio
import collections
import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from magnetar.broker.errors import MetadataProblem, ProducerBusy, ProducerFenced
from magnetar.telemetry import get_logger
from magnetar.wire import pulsar_api_pb2 as pb

log = get_logger(__name__)

EPOCH_PROPERTY = "pulsar.topic.epoch"  # the managed-ledger property holding a topic's epoch


class AccessMode(enum.IntEnum):
    """CommandProducer.producer_access_mode, as on the wire."""

    SHARED = pb.Shared
    EXCLUSIVE = pb.Exclusive
    WAIT_FOR_EXCLUSIVE = pb.WaitForExclusive
    EXCLUSIVE_WITH_FENCING = pb.ExclusiveWithFencing


@dataclass(frozen=True, slots=True)
class ProducerRequest:
    """Who asks: its name, mode, and the epoch it last saw (None: a new producer)."""

    name: str
    mode: AccessMode = AccessMode.SHARED
    epoch: int | None = None


@dataclass(eq=False)
class _Waiter:
    request: ProducerRequest
    granted: asyncio.Future[None]


PersistEpoch = Callable[[int], Awaitable[None]]
FenceProducers = Callable[[], None]


class ProducerAccess:
    """One topic's exclusive holder, its waiting producers and its epoch. See the module doc."""

    def __init__(self, topic: str, epoch: int | None, persist_epoch: PersistEpoch) -> None:
        self._topic = topic
        self.epoch = epoch
        self._persist_epoch = persist_epoch
        self.exclusive: str | None = None  # the holder's name (reserved while its epoch persists)
        self._waiting: collections.deque[_Waiter] = collections.deque()

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    async def admit(
        self,
        request: ProducerRequest,
        connected: int,
        fence_connected: FenceProducers,
        on_queued: Callable[[], None],
    ) -> int | None:
        """The epoch to report once ``request``'s producer may join (``connected`` producers
        are on the topic now); raises ProducerBusy / ProducerFenced. ``fence_connected``
        closes every connected producer (ExclusiveWithFencing); ``on_queued`` is called when a
        WaitForExclusive request is queued (cancel the await to withdraw it)."""
        held = self.exclusive is not None or bool(self._waiting)
        mode = request.mode
        if mode is AccessMode.SHARED:
            if held:
                raise ProducerBusy(self._topic, request.name)
            return self.epoch
        if mode is AccessMode.EXCLUSIVE and (held or connected):
            holder = self.exclusive or "a shared producer"
            raise ProducerFenced(self._topic, f"the topic has an existing producer: {holder}")
        if mode is AccessMode.EXCLUSIVE_WITH_FENCING and (self.exclusive is not None or connected):
            self._fail_waiting()
            fence_connected()
            self.exclusive = None
        if mode is AccessMode.WAIT_FOR_EXCLUSIVE and (held or connected):
            return await self._queue(request, on_queued)
        self._check_epoch(request)
        return await self._grant(request)

    def released(self, name: str, connected: int) -> None:
        """Producer ``name`` left; ``connected`` producers remain. Grants the next waiter
        when the topic is free."""
        if self.exclusive == name:
            self.exclusive = None
        if self.exclusive is None and connected == 0:
            self._promote()

    def close(self) -> None:
        """The topic closes: waiting producers get an error (their clients reconnect)."""
        waiting, self._waiting = self._waiting, collections.deque()
        for waiter in waiting:
            if not waiter.granted.done():
                waiter.granted.set_exception(MetadataProblem("the topic is being closed"))

    # ------------------------------------------------------------------ internals
    def _check_epoch(self, request: ProducerRequest) -> None:
        if request.epoch is not None and self.epoch is not None and request.epoch < self.epoch:
            raise ProducerFenced(
                self._topic,
                f"topic epoch has already moved (current {self.epoch}, producer {request.epoch})",
            )

    async def _grant(self, request: ProducerRequest) -> int:
        self.exclusive = request.name
        current = -1 if self.epoch is None else self.epoch
        epoch = request.epoch if request.epoch is not None else current + 1
        try:
            if epoch != self.epoch:
                await self._persist_epoch(epoch)
        except BaseException:
            if self.exclusive == request.name:
                self.exclusive = None
            raise
        self.epoch = epoch
        log.info("exclusive_producer_granted", topic=self._topic, producer=request.name,
                 epoch=epoch)  # fmt: skip
        return epoch

    async def _queue(self, request: ProducerRequest, on_queued: Callable[[], None]) -> int | None:
        waiter = _Waiter(request, asyncio.get_running_loop().create_future())
        self._waiting.append(waiter)
        log.info("exclusive_producer_queued", topic=self._topic, producer=request.name)
        on_queued()
        try:
            await waiter.granted  # set when it is this waiter's turn (the holder is reserved)
        except BaseException:
            if waiter in self._waiting:
                self._waiting.remove(waiter)
            elif (
                waiter.granted.done()
                and not waiter.granted.cancelled()
                and waiter.granted.exception() is None
            ):
                self.released(request.name, 0)  # its turn came as it was withdrawn
            raise
        return await self._grant(request)

    def _promote(self) -> None:
        """Hand the topic to the first waiter whose epoch is still current."""
        while self._waiting:
            waiter = self._waiting.popleft()
            if waiter.granted.done():
                continue
            try:
                self._check_epoch(waiter.request)
            except ProducerFenced as exc:
                waiter.granted.set_exception(exc)
                continue
            self.exclusive = waiter.request.name  # reserved until the waiter persists its epoch
            waiter.granted.set_result(None)
            return

    def _fail_waiting(self) -> None:
        waiting, self._waiting = self._waiting, collections.deque()
        for waiter in waiting:
            if not waiter.granted.done():
                waiter.granted.set_exception(ProducerFenced(self._topic, "fenced out"))
