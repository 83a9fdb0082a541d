"""Backlog quotas (Pulsar's BacklogQuotaManager): limit what the slowest subscription leaves behind.

A namespace's ``backlog_quota_map`` (else the broker defaults) has up to two quotas:
``destination_storage`` (``limitSize`` bytes) and ``message_age`` (``limitTime`` seconds). The
backlog of a persistent topic is what lies after the slowest *durable subscription's*
mark-delete (readers and the deduplication cursor do not count; no subscription, no backlog):
its size is estimated from the ledgers' sizes (a partly consumed ledger counts its average entry
size per remaining entry) and its age is the publish time of the oldest unacknowledged entry.

When a quota is exceeded its policy applies:

* ``producer_request_hold`` — connected producers are disconnected and new ones are refused with
  ``ServerError.ProducerBlockedQuotaExceededError``, a *retryable* error: the client keeps its
  messages and retries creating the producer until its send/operation timeout, so sends are held
  until the backlog drops (as in Pulsar);
* ``producer_exception`` — producers are disconnected and new ones refused with
  ``ProducerBlockedQuotaExceededException``: the client fails the producer and its pending sends;
* ``consumer_backlog_eviction`` — the slowest subscriptions' mark-deletes are moved forward:
  for size, to the earliest entry that leaves at most 90 % of the limit behind it; for age, past
  every entry older than the limit (:func:`magnetar.broker.message_expiry.expire_subscription`).

Checks run every ``check_interval_s`` (``backlogQuotaCheckIntervalInSeconds``) over the loaded
persistent topics, and on every producer creation of a topic with a durable subscription
(:meth:`BacklogQuotaManager.check_new_producer`).

The arithmetic (:func:`backlog_bytes`, :func:`eviction_position`, :func:`exceeded`) is pure; the
manager is the I/O shell. Concurrency: on the broker's loop; the manager owns one task, started
by :meth:`start` and cancelled by :meth:`close`; a failing topic is logged and skipped.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from magnetar.broker.entry import entry_info
from magnetar.broker.errors import (
    ProducerBlockedQuotaExceededError,
    ProducerBlockedQuotaExceededException,
)
from magnetar.broker.message_expiry import expire_subscription
from magnetar.broker.persistent_topic import PersistentTopic
from magnetar.broker.subscription import PersistentSubscription
from magnetar.broker.topic_sweep import TopicSweep
from magnetar.ids import EntryId
from magnetar.managed_ledger import ManagedLedger, Position
from magnetar.naming import NamespaceName
from magnetar.policies import BacklogQuota, Policies
from magnetar.telemetry import get_logger

log = get_logger(__name__)

DESTINATION_STORAGE = "destination_storage"
MESSAGE_AGE = "message_age"
HOLD = "producer_request_hold"
EXCEPTION = "producer_exception"
EVICTION = "consumer_backlog_eviction"
EVICTION_TARGET_FACTOR = 0.9


@dataclass(frozen=True, slots=True)
class BacklogQuotaConfig:
    """Broker settings (Pulsar's broker.conf names in the comments)."""

    check_enabled: bool = True  # backlogQuotaCheckEnabled
    check_interval_s: float = 60.0  # backlogQuotaCheckIntervalInSeconds
    default_limit_bytes: int = -1  # backlogQuotaDefaultLimitBytes
    default_limit_s: int = -1  # backlogQuotaDefaultLimitSecond
    default_policy: str = HOLD  # backlogQuotaDefaultRetentionPolicy


# ------------------------------------------------------------------ pure arithmetic


@dataclass(frozen=True, slots=True)
class LedgerSize:
    ledger_id: int
    entries: int
    size_bytes: int


@dataclass(frozen=True, slots=True)
class Backlog:
    """The slowest subscription's backlog: estimated bytes and the oldest entry's age."""

    size_bytes: int
    age_s: float


def effective_quotas(policies: Policies, config: BacklogQuotaConfig) -> dict[str, BacklogQuota]:
    """The namespace's quotas, else the broker defaults (only limits >= 0 count)."""
    quotas = dict(policies.backlog_quota_map)
    if DESTINATION_STORAGE not in quotas and config.default_limit_bytes >= 0:
        quotas[DESTINATION_STORAGE] = BacklogQuota(
            limit_size=config.default_limit_bytes, policy=config.default_policy
        )
    if MESSAGE_AGE not in quotas and config.default_limit_s >= 0:
        quotas[MESSAGE_AGE] = BacklogQuota(
            limit_time=config.default_limit_s, policy=config.default_policy
        )
    return {
        kind: q
        for kind, q in quotas.items()
        if (q.limit_size >= 0 if kind == DESTINATION_STORAGE else q.limit_time >= 0)
    }


def exceeded(
    quotas: Mapping[str, BacklogQuota], backlog: Backlog
) -> list[tuple[str, BacklogQuota]]:
    """The quotas ``backlog`` is over (a limit of 0 is exceeded by any backlog)."""
    out = []
    size_quota = quotas.get(DESTINATION_STORAGE)
    if size_quota is not None and backlog.size_bytes > size_quota.limit_size:
        out.append((DESTINATION_STORAGE, size_quota))
    age_quota = quotas.get(MESSAGE_AGE)
    if age_quota is not None and backlog.age_s > age_quota.limit_time:
        out.append((MESSAGE_AGE, age_quota))
    return out


def _after_in_ledger(ledger: LedgerSize, entry_id: int) -> int:
    """Estimated bytes of the entries after ``entry_id`` in ``ledger``."""
    remaining = ledger.entries - (entry_id + 1)
    if remaining <= 0 or ledger.entries <= 0:
        return 0
    return ledger.size_bytes * remaining // ledger.entries


def backlog_bytes(ledgers: Sequence[LedgerSize], mark_delete: Position) -> int:
    """Estimated bytes after ``mark_delete`` (Pulsar's estimated backlog size)."""
    total = 0
    for ledger in ledgers:
        if ledger.ledger_id < mark_delete.ledger_id:
            continue
        if ledger.ledger_id == mark_delete.ledger_id:
            total += _after_in_ledger(ledger, mark_delete.entry_id)
        else:
            total += ledger.size_bytes
    return total


def eviction_position(ledgers: Sequence[LedgerSize], target_bytes: int) -> Position | None:
    """The earliest entry such that at most ``target_bytes`` lie after it; None if no entry."""
    kept = 0
    for ledger in reversed(ledgers):
        if ledger.entries <= 0:
            continue
        if kept + ledger.size_bytes <= target_bytes:
            kept += ledger.size_bytes
            continue
        average = max(1, ledger.size_bytes // ledger.entries)
        keep_entries = max(0, (target_bytes - kept) // average)
        entry = ledger.entries - 1 - keep_entries
        return Position(ledger.ledger_id, EntryId(entry))  # type: ignore[arg-type]
    return None


# ------------------------------------------------------------------ the shell


def ledger_sizes(ml: ManagedLedger) -> list[LedgerSize]:
    """The chain with the live counts of the ledger being written."""
    current = ml.current_ledger_id
    out = []
    for li in ml.ledgers:
        if li.ledger_id == current:
            out.append(
                LedgerSize(
                    li.ledger_id, ml.layout.entries_of(li.ledger_id), ml.current_ledger_bytes
                )
            )
        else:
            out.append(LedgerSize(li.ledger_id, li.entries, li.size))
    return out


def durable_subscriptions(topic: PersistentTopic) -> list[PersistentSubscription]:
    return [s for s in topic.subscriptions.values() if s.durable]


async def measure(topic: PersistentTopic) -> Backlog:
    """The backlog behind the slowest durable subscription (reads one entry for its age)."""
    subs = durable_subscriptions(topic)
    if not subs:
        return Backlog(0, 0.0)
    slowest = min(s.cursor.mark_delete_position for s in subs)
    size = backlog_bytes(ledger_sizes(topic.ml), slowest)
    first = topic.ml.layout.next_position(slowest)
    age = 0.0
    if first is not None:
        entries = await topic.ml.read_positions([first])
        if entries:
            published_ms = entry_info(entries[0].data).publish_time
            age = max(0.0, time.time() - published_ms / 1000)
    return Backlog(size, age)


class BacklogQuotaManager(TopicSweep):
    """Checks the loaded persistent topics periodically and on producer creation."""

    name = "backlog-quota-check"

    def __init__(
        self,
        topics: Callable[[], Iterable[object]],
        policies: Callable[[NamespaceName], Awaitable[Policies]],
        config: BacklogQuotaConfig,
    ) -> None:
        super().__init__(topics, policies)
        self.config = config

    @property
    def interval_s(self) -> float:
        return self.config.check_interval_s

    @property
    def enabled(self) -> bool:
        return self.config.check_enabled

    async def check_topic(self, topic: PersistentTopic, policies: Policies) -> None:
        quotas = effective_quotas(policies, self.config)
        if not quotas:
            return
        over = exceeded(quotas, await measure(topic))
        for kind, quota in over:
            log.info("backlog_quota_exceeded", topic=str(topic.name), quota_type=kind,
                     policy=quota.policy)  # fmt: skip
            if quota.policy == EVICTION:
                await self._evict(topic, kind, quota)
            else:
                self._disconnect_producers(topic)

    async def check_new_producer(self, topic: PersistentTopic) -> None:
        """Refuse a new producer while a producer_* quota is exceeded.

        Without a durable subscription there is no backlog to exceed, so the namespace
        policies are not read at all (the common case of a producer on a fresh topic)."""
        if not durable_subscriptions(topic):
            return
        quotas = {
            k: q
            for k, q in effective_quotas(
                await self._policies(topic.name.namespace), self.config
            ).items()
            if q.policy in (HOLD, EXCEPTION)
        }
        if not quotas:
            return
        for kind, quota in exceeded(quotas, await measure(topic)):
            if quota.policy == EXCEPTION:
                raise ProducerBlockedQuotaExceededException(str(topic.name), kind)
            raise ProducerBlockedQuotaExceededError(str(topic.name), kind)

    @staticmethod
    def _disconnect_producers(topic: PersistentTopic) -> None:
        for producer in list(topic.producers.values()):
            topic.remove_producer(producer)
            producer.close_by_broker()
            log.info("producer_disconnected_backlog_quota", topic=str(topic.name),
                     producer=producer.name)  # fmt: skip

    async def _evict(self, topic: PersistentTopic, kind: str, quota: BacklogQuota) -> None:
        subs = durable_subscriptions(topic)
        if kind == MESSAGE_AGE:
            for sub in subs:
                await expire_subscription(topic.ml, sub, max(quota.limit_time, 0))
            return
        target = eviction_position(
            ledger_sizes(topic.ml), int(quota.limit_size * EVICTION_TARGET_FACTOR)
        )
        if target is None:
            return
        for sub in subs:
            if sub.cursor.mark_delete_position < target:
                await sub.cursor.mark_delete(target)
                log.info("backlog_evicted", topic=str(topic.name), subscription=sub.name,
                         mark_delete=str(target))  # fmt: skip
