"""Message TTL: expire what was published too long ago, on every subscription of a topic.

Pulsar's PersistentMessageExpiryMonitor. An entry is expired when ``now > publish_time + ttl``
(the publish time is the MessageMetadata's; a TTL of 0 expires nothing, as in Pulsar). Expiring
moves the subscription's mark-delete to the newest expired entry, so the backlog shrinks, a
consumer never receives those entries again, and the managed ledger may trim what is now
consumed. Publish times are assumed not to decrease along the log (Pulsar assumes the same): the
newest expired entry is found by a binary search over the unacknowledged range, reading
O(log n) entries.

:func:`expire_subscription` is shared by the admin's ``expireMessages`` and by
:class:`MessageExpiryMonitor`, which every ``message_expiry_check_interval_s`` applies the
effective TTL of each loaded persistent topic's namespace (the namespace's
``message_ttl_in_seconds``, else the broker's ``ttlDurationDefaultInSeconds``) to all its
subscriptions. The same pass re-applies the namespace retention to the topic's managed ledger
(so a policy changed through another broker, or a time-based retention with no traffic, is
honoured within one interval).

Concurrency: on the broker's loop. The monitor owns one task (started by :meth:`start`,
cancelled by :meth:`close`); a failing topic is logged and skipped, never stops the loop.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from magnetar.broker.entry import entry_info
from magnetar.broker.persistent_topic import PersistentTopic
from magnetar.broker.policy_defaults import (
    effective_retention,
    effective_ttl_s,
)
from magnetar.broker.retention import apply_retention
from magnetar.broker.subscription import PersistentSubscription
from magnetar.broker.topic_sweep import DefaultsSweep
from magnetar.ids import EntryId
from magnetar.managed_ledger import ManagedLedger, Position
from magnetar.managed_ledger.layout import LedgerLayout
from magnetar.policies import Policies
from magnetar.telemetry import get_logger

log = get_logger(__name__)


def now_ms() -> int:
    return int(time.time() * 1000)


def is_expired(publish_time_ms: int, ttl_s: int, at_ms: int) -> bool:
    """Pulsar's ``MessageImpl.isEntryExpired``."""
    return ttl_s > 0 and at_ms > publish_time_ms + ttl_s * 1000


@dataclass(frozen=True, slots=True)
class _Segment:
    ledger_id: int
    first_entry: int
    count: int


def unacked_span(layout: LedgerLayout, mark_delete: Position) -> list[_Segment]:
    """The entries after ``mark_delete`` as (ledger, first entry, count) segments, in order."""
    out: list[_Segment] = []
    for lid, entries in layout.items():
        if lid < mark_delete.ledger_id:
            continue
        first = mark_delete.entry_id + 1 if lid == mark_delete.ledger_id else 0
        if entries > first:
            out.append(_Segment(lid, first, entries - first))
    return out


def position_at(span: list[_Segment], index: int) -> Position:
    """The ``index``-th entry (0-based) of ``span``."""
    for seg in span:
        if index < seg.count:
            return Position(seg.ledger_id, EntryId(seg.first_entry + index))  # type: ignore[arg-type]
        index -= seg.count
    raise IndexError(index)


async def _publish_time(ml: ManagedLedger, pos: Position) -> int | None:
    entries = await ml.read_positions([pos])
    return entry_info(entries[0].data).publish_time if entries else None


async def newest_expired(
    ml: ManagedLedger, mark_delete: Position, ttl_s: int, at_ms: int
) -> Position | None:
    """The newest entry after ``mark_delete`` that is expired at ``at_ms``, or None."""
    if ttl_s <= 0:
        return None
    span = unacked_span(ml.layout, mark_delete)
    lo, hi = 0, sum(seg.count for seg in span)  # invariant: [0, lo) expired, [hi, n) not
    while lo < hi:
        mid = (lo + hi) // 2
        published = await _publish_time(ml, position_at(span, mid))
        if published is not None and is_expired(published, ttl_s, at_ms):
            lo = mid + 1
        else:
            hi = mid
    return position_at(span, lo - 1) if lo > 0 else None


async def expire_subscription(
    ml: ManagedLedger, subscription: PersistentSubscription, ttl_s: int, at_ms: int | None = None
) -> Position | None:
    """Mark-delete ``subscription`` up to its newest expired entry; return that entry, if any."""
    cursor = subscription.cursor
    if cursor.backlog == 0:
        return None
    target = await newest_expired(
        ml, cursor.mark_delete_position, ttl_s, now_ms() if at_ms is None else at_ms
    )
    if target is None or target <= cursor.mark_delete_position:
        return None
    backlog_before = cursor.backlog
    await cursor.mark_delete(target)
    subscription.rate_expired.record(max(0, backlog_before - cursor.backlog))
    log.info(
        "messages_expired",
        topic=subscription.topic,
        subscription=subscription.name,
        ttl_s=ttl_s,
        mark_delete=str(target),
    )
    return target


class MessageExpiryMonitor(DefaultsSweep):
    """Applies TTL (and re-applies retention) to the loaded persistent topics periodically."""

    name = "message-expiry-monitor"

    @property
    def interval_s(self) -> float:
        return self._defaults.message_expiry_check_interval_s

    async def check_topic(self, topic: PersistentTopic, policies: Policies) -> None:
        await apply_retention(topic.ml, effective_retention(policies, self._defaults))
        ttl_s = effective_ttl_s(policies, self._defaults)
        if ttl_s <= 0:
            return
        at_ms = now_ms()
        for subscription in list(topic.subscriptions.values()):
            if topic.is_open:
                await expire_subscription(topic.ml, subscription, ttl_s, at_ms)
