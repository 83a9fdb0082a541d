"""Who may consume: Exclusive, Failover and Shared membership rules (Key_Shared: key_shared.py).

* :class:`ExclusiveSelector` — one consumer; a second one is refused with
  :class:`ConsumerBusy` ("Exclusive consumer is already connected").
* :class:`FailoverSelector` — any number of consumers, one *active*. Consumers are sorted by
  priority level (lower level = higher priority), then by consumer name; only the consumers of
  the best level are candidates. The active one is candidate ``partition_index % n`` for a
  partition of a partitioned topic and candidate 0 otherwise (Pulsar's
  ``AbstractDispatcherSingleActiveConsumer.pickAndScheduleActiveConsumer``). Every membership
  change returns :class:`ActiveConsumerChange` events to send as ACTIVE_CONSUMER_CHANGE: one per
  consumer when the active consumer changed, else one for the consumer that just joined.
  When ``previous_active`` differs from ``active``, the subscription hands the previous active
  consumer's unacked entries back for redelivery (the standby takes over with them).
* :class:`SharedSelector` — consumers in join order; :meth:`SharedSelector.rotation` gives them in
  round-robin order starting after the consumer served last. The dispatcher plan serves the best
  priority level first and skips consumers without permits.
* :func:`check_sub_type` — a subscription keeps one type while it has consumers.

Driving a Failover subscription from its task::

    sel = FailoverSelector(partition_index=topic.partition_index)   # -1: not partitioned
    change = sel.add(info)            # raises nothing; SUBSCRIBE -> SUCCESS
    for ev in change.events:          # one ACTIVE_CONSUMER_CHANGE each
        send_active_consumer_change(ev.consumer, ev.is_active)
    if change.previous_active not in (None, change.active):
        redeliver(pending.remove_consumer(change.previous_active))

Mutable objects owned by one subscription's task; no awaits, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from magnetar.broker.dispatch.consumers import ConsumerInfo, ConsumerKey, SubType
from magnetar.broker.dispatch.errors import ConsumerBusy


def check_sub_type(current: SubType | None, requested: SubType) -> None:
    """Refuse a consumer whose type differs from the subscription's current consumers' type."""
    if current is not None and current != requested:
        raise ConsumerBusy(
            f"Subscription is of different type: it is {current.name}, "
            f"the consumer asked for {requested.name}"
        )


class ExclusiveSelector:
    """At most one consumer."""

    def __init__(self) -> None:
        self._consumer: ConsumerInfo | None = None

    @property
    def active(self) -> ConsumerKey | None:
        return None if self._consumer is None else self._consumer.key

    @property
    def consumers(self) -> tuple[ConsumerInfo, ...]:
        return () if self._consumer is None else (self._consumer,)

    def add(self, consumer: ConsumerInfo) -> None:
        if self._consumer is not None:
            raise ConsumerBusy("Exclusive consumer is already connected")
        self._consumer = consumer

    def remove(self, key: ConsumerKey) -> bool:
        """Forget the consumer; False if ``key`` was not the consumer."""
        if self._consumer is None or self._consumer.key != key:
            return False
        self._consumer = None
        return True


@dataclass(frozen=True, slots=True)
class ActiveConsumerChange:
    """One ACTIVE_CONSUMER_CHANGE to send: ``consumer`` is (or is not) the active one."""

    consumer: ConsumerKey
    is_active: bool


@dataclass(frozen=True, slots=True)
class FailoverChange:
    """The outcome of a membership change of a Failover subscription."""

    previous_active: ConsumerKey | None
    active: ConsumerKey | None
    events: tuple[ActiveConsumerChange, ...]

    @property
    def changed(self) -> bool:
        return self.previous_active != self.active


class FailoverSelector:
    """One active consumer among many, by priority level then name (see module docstring)."""

    def __init__(self, partition_index: int = -1) -> None:
        self._partition_index = partition_index
        self._consumers: list[ConsumerInfo] = []
        self._active: ConsumerKey | None = None

    @property
    def active(self) -> ConsumerKey | None:
        return self._active

    @property
    def consumers(self) -> tuple[ConsumerInfo, ...]:
        """Consumers in Failover order (priority level, then name, then join order)."""
        return tuple(self._consumers)

    def add(self, consumer: ConsumerInfo) -> FailoverChange:
        if any(c.key == consumer.key for c in self._consumers):
            raise ConsumerBusy(f"consumer {consumer.key} is already subscribed")
        self._consumers.append(consumer)
        return self._repick(joined=consumer.key)

    def remove(self, key: ConsumerKey) -> FailoverChange:
        self._consumers = [c for c in self._consumers if c.key != key]
        return self._repick(joined=None)

    def _pick(self) -> ConsumerKey | None:
        if not self._consumers:
            return None
        # list.sort is stable: consumers equal in level and name keep their join order.
        self._consumers.sort(key=lambda c: (c.priority_level, c.name))
        best = self._consumers[0].priority_level
        candidates = [c for c in self._consumers if c.priority_level == best]
        index = self._partition_index % len(candidates) if self._partition_index >= 0 else 0
        return candidates[index].key

    def _repick(self, joined: ConsumerKey | None) -> FailoverChange:
        previous = self._active
        self._active = self._pick()
        if self._active != previous:
            events = tuple(
                ActiveConsumerChange(c.key, c.key == self._active) for c in self._consumers
            )
        elif joined is not None:
            events = (ActiveConsumerChange(joined, joined == self._active),)
        else:
            events = ()
        return FailoverChange(previous, self._active, events)


class SharedSelector:
    """Shared membership in join order, with a round-robin position."""

    def __init__(self) -> None:
        self._consumers: list[ConsumerInfo] = []
        self._next = 0

    @property
    def consumers(self) -> tuple[ConsumerInfo, ...]:
        return tuple(self._consumers)

    def add(self, consumer: ConsumerInfo) -> None:
        if any(c.key == consumer.key for c in self._consumers):
            raise ConsumerBusy(f"consumer {consumer.key} is already subscribed")
        self._consumers.append(consumer)

    def remove(self, key: ConsumerKey) -> bool:
        for i, c in enumerate(self._consumers):
            if c.key == key:
                del self._consumers[i]
                if i < self._next:
                    self._next -= 1
                if self._next >= len(self._consumers):
                    self._next = 0
                return True
        return False

    def rotation(self) -> Sequence[ConsumerInfo]:
        """Consumers in round-robin order, starting with the one due next."""
        return self._consumers[self._next :] + self._consumers[: self._next]

    def served(self, key: ConsumerKey | None) -> None:
        """Record the consumer served last, so the next rotation starts after it."""
        for i, c in enumerate(self._consumers):
            if c.key == key:
                self._next = (i + 1) % len(self._consumers)
                return
