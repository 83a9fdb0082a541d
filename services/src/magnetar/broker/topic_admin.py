"""TopicAdmin: the admin's topic operations (``magnetar.admin.service.TopicService``).

A separate object composed by :class:`~magnetar.broker.service.BrokerService` (``service.admin``)
that sees the broker's topics only through the :class:`BrokerTopics` protocol: load, look up,
unload, list. The admin app is given ``service.admin``; the binary protocol's connection calls
its :meth:`TopicAdmin.partitions_auto_created` for PARTITIONED_METADATA requests.

Stats follow Pulsar's JSON shapes (TopicStats, PersistentTopicInternalStats) with the fields a
Pulsar user reads most; rates are over the broker's ``stats_window_s`` (:mod:`.stats`). Cursor
operations go through the subscription so its dispatcher state stays consistent: a reset
disconnects the consumers (they resubscribe, as in Pulsar); skip and expire only move the
mark-delete forward.

Errors: TopicNotFound / SubscriptionNotFound (404), TopicExists / SubscriptionExists (409),
TopicBusy / SubscriptionBusy (412, delete without force), NotAllowed (405, cursor operations on a
non-persistent topic).

Concurrency: called from the admin's request tasks and the connections' request tasks, on the
broker's loop.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any, Protocol

from magnetar.authorization import CONSUME, PRODUCE
from magnetar.broker.compaction import delete_compacted_ledgers
from magnetar.broker.compaction.errors import CompactionInProgress
from magnetar.broker.errors import (
    InvalidMessagePosition,
    MessageNotFound,
    NamespaceNotFound,
    NotAllowed,
    PartitionedTopicExists,
    SubscriptionBusy,
    SubscriptionExists,
    SubscriptionNotFound,
    TopicBusy,
    TopicExists,
)
from magnetar.broker.message_expiry import expire_subscription
from magnetar.broker.message_view import MessageView, message_view
from magnetar.broker.non_persistent_topic import NonPersistentSubscription, NonPersistentTopic
from magnetar.broker.ownership import Ownership
from magnetar.broker.persistence import apply_persistence, check_persistence
from magnetar.broker.persistent_topic import PersistentTopic
from magnetar.broker.policy_defaults import (
    BrokerPolicyDefaults,
    effective_auto_topic_creation,
    effective_delayed_delivery,
    effective_retention,
)
from magnetar.broker.replication.names import cluster_of
from magnetar.broker.replication.stats import Inbound, replication_stats
from magnetar.broker.resources import BrokerResources
from magnetar.broker.retention import apply_retention
from magnetar.broker.schemas import SchemaRegistry
from magnetar.broker.security import BrokerSecurity
from magnetar.broker.stats import DEFAULT_WINDOW_S, iso_utc, total
from magnetar.broker.subscription import PersistentSubscription
from magnetar.errors import MagnetarError
from magnetar.ids import EntryId, LedgerId
from magnetar.managed_ledger import ManagedLedgerConfig, Position
from magnetar.naming import NamespaceName, TopicName
from magnetar.policies import (
    AutoTopicCreationOverride,
    MessageIdData,
    PersistencePolicies,
    Policies,
)
from magnetar.protocol.message_id import MessageId
from magnetar.telemetry import get_logger

log = get_logger(__name__)

AnyTopic = PersistentTopic | NonPersistentTopic


def _consumer_stats(
    topic: AnyTopic, sub_name: str, window_s: float = DEFAULT_WINDOW_S
) -> list[dict[str, Any]]:
    sub = topic.subscriptions.get(sub_name)
    if sub is None:
        return []
    return [
        {
            "consumerName": c.name,
            "availablePermits": c.permits,
            "unackedMessages": c.unacked_messages,
            "msgRateOut": c.rate_out.rate(window_s).messages,
            "msgThroughputOut": c.rate_out.rate(window_s).bytes,
            "msgRateRedeliver": c.rate_redeliver.rate(window_s).messages,
            "msgOutCounter": c.messages_out,
            "bytesOutCounter": c.bytes_out,
            "address": c.cnx.address,
            "connectedSince": iso_utc(c.connected_since),
        }
        for c in sub.consumers
    ]


def topic_stats(topic: AnyTopic, window_s: float = DEFAULT_WINDOW_S) -> dict[str, Any]:
    subscriptions: dict[str, Any] = {}
    out = {
        n: total(c.rate_out.rate(window_s) for c in s.consumers)
        for n, s in topic.subscriptions.items()
    }
    rate_in = total(p.rate_in.rate(window_s) for p in topic.producers.values())
    for name, sub in topic.subscriptions.items():
        subscriptions[name] = {
            "msgRateOut": out[name].messages,
            "msgThroughputOut": out[name].bytes,
            "msgRateRedeliver": total(
                c.rate_redeliver.rate(window_s) for c in sub.consumers
            ).messages,
            "msgRateExpired": sub.rate_expired.rate(window_s).messages
            if isinstance(sub, PersistentSubscription)
            else 0.0,
            "msgBacklog": sub.backlog if isinstance(sub, PersistentSubscription) else 0,
            "msgDelayed": sub.delayed_count if isinstance(sub, PersistentSubscription) else 0,
            "backlogSize": topic.ml.estimated_backlog_size(sub.cursor.mark_delete_position)
            if isinstance(sub, PersistentSubscription) and isinstance(topic, PersistentTopic)
            else 0,
            "unackedMessages": sum(c.unacked_messages for c in sub.consumers),
            "type": _sub_type_name(sub.sub_type),
            "isDurable": sub.durable if isinstance(sub, PersistentSubscription) else False,
            "consumers": _consumer_stats(topic, name, window_s),
        }
    storage = topic.storage_size if isinstance(topic, PersistentTopic) else 0
    return {
        "msgRateIn": rate_in.messages,
        "msgThroughputIn": rate_in.bytes,
        "msgRateOut": total(out.values()).messages,
        "msgThroughputOut": total(out.values()).bytes,
        "msgInCounter": topic.messages_in,
        "bytesInCounter": topic.bytes_in,
        "averageMsgSize": (topic.bytes_in / topic.messages_in) if topic.messages_in else 0.0,
        "storageSize": storage,
        "backlogSize": _backlog_size(topic),
        "publishers": [
            {
                "producerId": p.producer_id,
                "producerName": p.name,
                "msgRateIn": p.rate_in.rate(window_s).messages,
                "msgThroughputIn": p.rate_in.rate(window_s).bytes,
                "averageMsgSize": (p.bytes_in / p.messages_in) if p.messages_in else 0.0,
                "address": p.cnx.address,
                "connectedSince": iso_utc(p.connected_since),
            }
            for p in topic.producers.values()
            if not p.is_replicator  # Pulsar lists those under replication, as inbound
        ],
        "subscriptions": subscriptions,
        "replication": _replication(topic, window_s),
        "deduplicationStatus": topic.deduplication.status_name
        if isinstance(topic, PersistentTopic)
        else "Disabled",
        "compaction": topic.compaction.stats_json()
        if isinstance(topic, PersistentTopic)
        else _NO_COMPACTION,
    }


def _replication(topic: AnyTopic, window_s: float) -> dict[str, Any]:
    """Pulsar's ``replication`` section: one entry per cluster replicated to or from."""
    inbound = {
        cluster_of(p.name): Inbound(p.rate_in.rate(window_s), p.cnx.address, p.connected_since)
        for p in topic.producers.values()
        if p.is_replicator
    }
    replicators = (
        topic.replication.replicators
        if isinstance(topic, PersistentTopic) and topic.replication is not None
        else {}
    )
    return replication_stats(replicators, inbound, window_s)


_NO_COMPACTION = {
    "lastCompactionRemovedEventCount": 0,
    "lastCompactionSucceedTimestamp": 0,
    "lastCompactionFailedTimestamp": 0,
    "lastCompactionDurationTimeInMills": 0,
}


def _backlog_size(topic: AnyTopic) -> int:
    """Bytes the slowest durable subscription has still to consume (Pulsar's backlogSize)."""
    if not isinstance(topic, PersistentTopic):
        return 0
    durable = [
        s.cursor
        for s in topic.subscriptions.values()
        if isinstance(s, PersistentSubscription) and s.durable
    ]
    if not durable:
        return 0
    slowest = min(c.mark_delete_position for c in durable)
    return topic.ml.estimated_backlog_size(slowest)


def internal_stats(topic: PersistentTopic) -> dict[str, Any]:
    ml = topic.ml
    last = ml.last_confirmed_position
    ledgers = [
        {"ledgerId": li.ledger_id, "entries": li.entries, "size": li.size, "offloaded": False}
        for li in ml.ledgers
    ]
    cursors = {
        name: {
            "markDeletePosition": str(cursor.mark_delete_position),
            "readPosition": str(cursor.read_position),
            "waitingReadOp": False,
            "pendingReadOps": 0,
            "messagesConsumedCounter": 0,
            "cursorLedger": -1,
            "cursorLedgerLastEntry": -1,
            "individuallyDeletedMessages": "["
            + ", ".join(f"({lo}..{hi}]" for lo, hi in cursor.individually_deleted)
            + "]",
            "state": "Open",
            "numberOfEntriesSinceFirstNotAckedMessage": cursor.backlog,
            "totalNonContiguousDeletedMessagesRange": len(cursor.individually_deleted),
            "properties": cursor.properties,
        }
        for name, cursor in ml.cursors.items()
    }
    return {
        "entriesAddedCounter": topic.messages_in,
        "numberOfEntries": ml.number_of_entries,
        "totalSize": topic.bytes_in,
        "currentLedgerEntries": ml.layout.entries_of(ml.current_ledger_id)
        if ml.current_ledger_id is not None and ml.current_ledger_id in ml.layout
        else 0,
        "currentLedgerSize": 0,
        "waitingCursorsCount": 0,
        "pendingAddEntriesCount": 0,
        "lastConfirmedEntry": str(last),
        "state": "LedgerOpened",
        "ledgers": ledgers,
        "cursors": cursors,
        "compactedLedger": topic.compaction.compacted_ledger_json(),
    }


async def _delete_non_persistent_subscription(
    topic: NonPersistentTopic, sub: str, force: bool
) -> None:
    subscription = topic.subscriptions.get(sub)
    if subscription is None:
        raise SubscriptionNotFound(sub)
    if subscription.consumers and not force:
        raise SubscriptionBusy(str(topic.name), sub)
    for consumer in list(subscription.consumers):
        consumer.close_by_broker()
        topic.consumer_left(subscription, consumer)
    topic.subscriptions.pop(sub, None)


def _sub_type_name(sub_type: int) -> str:
    return {0: "Exclusive", 1: "Shared", 2: "Failover", 3: "Key_Shared"}.get(sub_type, "Exclusive")


class BrokerTopics(Protocol):
    """What TopicAdmin needs of the broker's topics (implemented by BrokerService)."""

    @property
    def resources(self) -> BrokerResources: ...

    @property
    def web_service_url(self) -> str: ...

    @property
    def broker_service_url(self) -> str: ...

    @property
    def topics(self) -> Mapping[str, AnyTopic]:
        """The loaded topics by full name (read only)."""
        ...

    async def get_topic(self, topic: TopicName, *, create: bool = True) -> AnyTopic: ...

    async def topic_exists(self, topic: TopicName) -> bool: ...

    async def unload_topic(self, topic: TopicName) -> None: ...

    async def list_topics(self, namespace: NamespaceName, persistent: bool = True) -> list[str]: ...

    @property
    def ownership(self) -> Ownership: ...

    @property
    def schemas(self) -> SchemaRegistry: ...

    @property
    def security(self) -> BrokerSecurity: ...


class TopicAdmin:
    """The TopicService operations over ``broker``'s topics."""

    def __init__(
        self,
        broker: BrokerTopics,
        policy_defaults: BrokerPolicyDefaults,
        stats_window_s: float,
        managed_ledger: ManagedLedgerConfig | None = None,
    ) -> None:
        self._broker = broker
        self._policy_defaults = policy_defaults
        self._stats_window_s = stats_window_s
        self._managed_ledger = managed_ledger or ManagedLedgerConfig()

    # ------------------------------------------------------------------ the broker's answers
    @property
    def resources(self) -> BrokerResources:
        return self._broker.resources

    @property
    def web_service_url(self) -> str:
        return self._broker.web_service_url

    @property
    def broker_service_url(self) -> str:
        return self._broker.broker_service_url

    async def list_topics(self, ns: NamespaceName, persistent: bool) -> list[str]:
        return await self._broker.list_topics(ns, persistent)

    async def topic_exists(self, t: TopicName) -> bool:
        return await self._broker.topic_exists(t)

    async def unload_topic(self, t: TopicName) -> None:
        await self._broker.unload_topic(t)

    @property
    def ownership(self) -> Ownership:
        return self._broker.ownership

    @property
    def schemas(self) -> SchemaRegistry:
        return self._broker.schemas

    # ------------------------------------------------------------------ topics and cursors
    async def _persistent(self, t: TopicName) -> PersistentTopic:
        topic = await self._broker.get_topic(t, create=False)
        if not isinstance(topic, PersistentTopic):
            raise NotAllowed(f"{t} is not a persistent topic")
        return topic

    async def _subscription(self, t: TopicName, sub: str) -> PersistentSubscription:
        return (await self._persistent(t)).subscription(sub)

    async def create_topic(self, t: TopicName) -> None:
        """Create ``t`` in a namespace the caller found (the admin's ``topic_of``, or
        ``partitions_auto_created``'s policies read); the load reads the policies it needs,
        and a namespace deleted meanwhile makes it TopicNotFound."""
        if await self.topic_exists(t):
            raise TopicExists(str(t))
        await self._broker.get_topic(t, create=True)

    async def delete_topic(self, t: TopicName, force: bool) -> None:
        topic = await self._broker.get_topic(t, create=False)
        busy = topic.producers or any(s.consumers for s in topic.subscriptions.values())
        if busy and not force:
            raise TopicBusy(str(t))
        await self.unload_topic(t)
        if isinstance(topic, PersistentTopic):
            # The closed ledger deletes itself; the factory's delete would reopen it with the
            # default ManagedLedgerConfig (ensemble 3) and fail on a one-bookie standalone.
            compacted = topic.compaction.ledger_ids()
            await topic.ml.delete()
            await delete_compacted_ledgers(topic.ml.ledger_access, compacted)

    async def topic_stats(self, t: TopicName) -> dict[str, Any]:
        return topic_stats(await self._broker.get_topic(t, create=False), self._stats_window_s)

    async def topic_internal_stats(self, t: TopicName) -> dict[str, Any]:
        topic = await self._broker.get_topic(t, create=False)
        if isinstance(topic, NonPersistentTopic):
            # Pulsar's NonPersistentTopic.getInternalStats: a counter and empty cursor stats.
            return {
                "entriesAddedCounter": topic.messages_in,
                "cursors": {name: {} for name in sorted(topic.subscriptions)},
            }
        return internal_stats(topic)

    async def list_subscriptions(self, t: TopicName) -> list[str]:
        return sorted((await self._broker.get_topic(t, create=False)).subscriptions)

    async def create_subscription(self, t: TopicName, sub: str, position: Any) -> None:
        if not t.is_persistent:
            raise NotAllowed(
                f"Create subscription on non-persistent topic {t} can only be done through client"
            )
        # Pulsar creates the topic too when auto-creation allows it.
        allowed = (await self.auto_topic_creation(t.namespace)).allow_auto_topic_creation
        topic = await self._broker.get_topic(t, create=allowed)
        assert isinstance(topic, PersistentTopic)
        if sub in topic.subscriptions:
            raise SubscriptionExists(str(t), sub)
        await topic.create_subscription(sub, MessageId(position.ledger_id, position.entry_id))

    async def delete_subscription(self, t: TopicName, sub: str, force: bool) -> None:
        found = await self._broker.get_topic(t, create=False)
        if isinstance(found, NonPersistentTopic):
            await _delete_non_persistent_subscription(found, sub, force)
            return
        topic = await self._persistent(t)
        subscription = topic.subscription(sub)
        if subscription.consumers and not force:
            raise SubscriptionBusy(str(t), sub)
        for consumer in list(subscription.consumers):
            consumer.close_by_broker()
            subscription.remove_consumer(consumer)
        await topic.unsubscribe(subscription, None)

    async def skip_messages(self, t: TopicName, sub: str, n: int) -> None:
        subscription = await self._subscription(t, sub)
        cursor, layout = subscription.cursor, subscription.ml.layout
        skipped: list[Position] = []
        pos = layout.next_position(cursor.mark_delete_position)
        while pos is not None and len(skipped) < n:
            if not cursor.is_acknowledged(pos):
                skipped.append(pos)
            pos = layout.next_position(pos)
        if skipped:
            await cursor.delete(skipped)

    async def skip_all(self, t: TopicName, sub: str) -> None:
        subscription = await self._subscription(t, sub)
        last = subscription.ml.layout.last_position()
        if last > subscription.cursor.mark_delete_position:
            await subscription.cursor.mark_delete(last)

    async def reset_cursor_to_time(self, t: TopicName, sub: str, timestamp_ms: int) -> None:
        topic = await self._persistent(t)
        subscription = topic.subscription(sub)
        await subscription.reset_cursor(await topic.position_for_time(timestamp_ms))

    async def reset_cursor_to_id(
        self, t: TopicName, sub: str, ledger_id: int, entry_id: int
    ) -> None:
        topic = await self._persistent(t)
        subscription = topic.subscription(sub)
        await subscription.reset_cursor(topic.start_position(MessageId(ledger_id, entry_id)))

    async def terminate_topic(self, t: TopicName) -> MessageIdData:
        """Pulsar's terminate: no more publishing, ever; the id of the last message."""
        if await self.resources.get_partitions(t):
            raise NotAllowed("Termination of a partitioned topic is not allowed")
        last = await (await self._persistent(t)).terminate()
        return MessageIdData(last.ledger_id, last.entry_id, t.partition_index)

    # ------------------------------------------------------------------ compaction
    async def compact(self, t: TopicName) -> None:
        """Start a compaction of ``t`` (Pulsar's triggerCompaction); 409 if one runs."""
        if not (await self._persistent(t)).compaction.trigger():
            raise CompactionInProgress(str(t))

    async def compaction_status(self, t: TopicName) -> dict[str, str]:
        """Pulsar's LongRunningProcessStatus of ``t``'s last compaction since it loaded."""
        return (await self._persistent(t)).compaction.status_json()

    # ------------------------------------------------------------------ reading messages
    async def peek_message(self, t: TopicName, sub: str, n: int) -> MessageView:
        """The ``n``-th message the subscription has not acknowledged (1 is the first), read
        without moving its cursor (Pulsar's peek-messages, one entry per call)."""
        if n < 1:
            raise InvalidMessagePosition(n)
        topic = await self._persistent(t)
        cursor = topic.subscription(sub).cursor
        layout = topic.ml.layout
        pos = layout.next_position(cursor.mark_delete_position)
        seen = 0
        while pos is not None:
            if not cursor.is_acknowledged(pos):
                seen += 1
                if seen == n:
                    return await self._view(topic, pos)
            pos = layout.next_position(pos)
        raise MessageNotFound(str(t), f"unacknowledged message {n} of subscription {sub!r}")

    async def examine_message(self, t: TopicName, initial: str, n: int) -> MessageView:
        """The ``n``-th stored message counted from the first (``earliest``) or back from the
        last (``latest``): Pulsar's examine-message."""
        if n < 1:
            raise InvalidMessagePosition(n)
        topic = await self._persistent(t)
        layout = topic.ml.layout
        pos = layout.nth_from_start(n) if initial == "earliest" else layout.nth_from_end(n)
        if pos is None:
            raise MessageNotFound(str(t), f"message {n} from the {initial}")
        return await self._view(topic, pos)

    async def get_message_by_id(self, t: TopicName, ledger_id: int, entry_id: int) -> MessageView:
        topic = await self._persistent(t)
        pos = Position(LedgerId(ledger_id), EntryId(entry_id))
        if not topic.ml.layout.contains(pos):
            raise MessageNotFound(str(t), f"message {ledger_id}:{entry_id}")
        return await self._view(topic, pos)

    async def last_message_id(self, t: TopicName) -> MessageIdData:
        """The id of the topic's last message ((ledger, -1) while it has none)."""
        last = await (await self._persistent(t)).last_message_id()
        return MessageIdData(last.ledger_id, last.entry_id, t.partition_index, last.batch_index)

    async def _view(self, topic: PersistentTopic, pos: Position) -> MessageView:
        entries = await topic.ml.read_positions([pos])
        if not entries:
            raise MessageNotFound(str(topic.name), f"message {pos.ledger_id}:{pos.entry_id}")
        return message_view(pos, entries[0].data)

    async def expire_messages(self, t: TopicName, sub: str, seconds: int) -> None:
        """Pulsar's expireMessages: what was published more than ``seconds`` ago (0: nothing)."""
        topic = await self._persistent(t)
        await expire_subscription(topic.ml, topic.subscription(sub), seconds)

    # ------------------------------------------------------------------ namespace policies
    async def auto_topic_creation(self, ns: NamespaceName) -> AutoTopicCreationOverride:
        """The namespace's autoTopicCreation override, else the broker's setting."""
        policies = await self.resources.get_policies(ns)
        return effective_auto_topic_creation(policies, self._policy_defaults)

    async def partitions_auto_created(self, t: TopicName) -> int:
        """``t``'s partition count, first creating it as a partitioned topic when Pulsar would.

        Pulsar creates partitioned-topic metadata on a metadata request when the effective
        autoTopicCreation allows it with type ``partitioned`` and no non-partitioned topic of
        that name exists; ``defaultNumPartitions`` partitions. A missing namespace creates
        nothing (the producer or consumer that follows gets the namespace error).
        """
        n = await self.resources.get_partitions(t)
        if n or t.is_partition:
            return n
        try:
            auto = await self.auto_topic_creation(t.namespace)
        except NamespaceNotFound:
            return 0
        if not (auto.allow_auto_topic_creation and auto.topic_type == "partitioned"):
            return 0
        if await self.topic_exists(t):
            return 0
        with contextlib.suppress(PartitionedTopicExists):  # a concurrent creation
            await self.resources.create_partitioned_topic(t, auto.default_num_partitions or 1)
        n = await self.resources.get_partitions(t)
        if t.is_persistent:  # non-persistent partitions exist while they have clients
            for i in range(n):
                with contextlib.suppress(TopicExists):
                    await self.create_topic(t.partition(i))
        log.info("partitioned_topic_auto_created", topic=str(t), partitions=n)
        return n

    def check_persistence(self, persistence: PersistencePolicies) -> PersistencePolicies:
        """``persistence`` if within this broker's managedLedgerMax* bounds (else 412)."""
        return check_persistence(persistence, self._policy_defaults)

    async def _recheck_permissions(self, ns: NamespaceName) -> None:
        """As Pulsar does on a policy update: producers and consumers of ``ns`` whose role lost
        its permission are closed by the broker (their client's re-attach is then refused)."""
        security = self._broker.security
        if not security.config.authorization_enabled:
            return
        for topic in list(self._broker.topics.values()):
            if topic.name.namespace != ns:
                continue
            for producer in list(topic.producers.values()):
                if not await security.still_allowed(producer.cnx.caller, topic.name, PRODUCE, None):
                    log.info("producer_permission_revoked", topic=str(topic.name))
                    producer.close_by_broker()
            subscriptions: list[PersistentSubscription | NonPersistentSubscription] = list(
                topic.subscriptions.values()
            )
            for sub in subscriptions:
                for consumer in list(sub.consumers):
                    if not await security.still_allowed(
                        consumer.cnx.caller, topic.name, CONSUME, consumer.subscription
                    ):
                        log.info("consumer_permission_revoked", topic=str(topic.name))
                        consumer.close_by_broker()

    async def policies_changed(self, ns: NamespaceName, policies: Policies) -> None:
        """Apply ``ns``'s retention, delayed delivery and persistence, from the ``policies``
        just stored, to its loaded persistent topics now (TTL: next check; persistence: from
        each topic's next ledger)."""
        await self._recheck_permissions(ns)
        retention = effective_retention(policies, self._policy_defaults)
        delayed = effective_delayed_delivery(policies, self._policy_defaults)
        for topic in list(self._broker.topics.values()):
            if isinstance(topic, PersistentTopic) and topic.is_open and topic.name.namespace == ns:
                topic.delayed_delivery = delayed
                apply_persistence(topic.ml, policies.persistence, self._managed_ledger)
                try:
                    await apply_retention(topic.ml, retention)
                except MagnetarError as exc:  # the policy is saved; the next check retries
                    log.warning("retention_apply_failed", topic=str(topic.name), error=repr(exc))
