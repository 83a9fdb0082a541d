"""What the admin API needs from the broker: the ``TopicService`` protocol.

The broker's ``TopicAdmin`` (``BrokerService.admin``) implements it (checked by mypy where the
two are wired). Clusters, tenants, namespaces and partitioned-topic metadata go through
``resources`` directly; everything that touches a live topic (its managed ledger, cursors,
connected clients) goes through the methods here. Names passed in are already parsed and
validated; partitioned topics are fanned out to their partitions by the admin layer, so every
``TopicName`` here is a non-partitioned topic or one partition.

Errors the implementation raises, mapped to HTTP statuses in :mod:`magnetar.admin.errors`:
``TopicNotFound``/``SubscriptionNotFound`` (404), ``TopicExists``/``SubscriptionExists`` (409),
``TopicBusy``/``SubscriptionBusy`` (412, delete without force), ``NotAllowed`` (405).

Concurrency: the admin app calls these from request tasks on the broker's event loop.
"""

from __future__ import annotations

from typing import Any, Protocol

from magnetar.broker.message_view import MessageView
from magnetar.broker.ownership import Ownership
from magnetar.broker.resources import BrokerResources
from magnetar.broker.schemas import SchemaRegistry
from magnetar.naming import NamespaceName, TopicName
from magnetar.policies import MessageIdData, PersistencePolicies, Policies


class TopicService(Protocol):
    """Topic operations the broker offers the admin API (see the module docstring)."""

    @property
    def resources(self) -> BrokerResources: ...

    @property
    def schemas(self) -> SchemaRegistry:
        """Topics' schema histories (:mod:`magnetar.admin.schemas`)."""
        ...

    @property
    def web_service_url(self) -> str:
        """``http://host:port``, for lookup answers."""
        ...

    @property
    def broker_service_url(self) -> str:
        """``pulsar://host:port``, for lookup answers."""
        ...

    @property
    def ownership(self) -> Ownership:
        """Bundles, lookup answers and unloading (:mod:`magnetar.broker.ownership`)."""
        ...

    async def list_topics(self, ns: NamespaceName, persistent: bool) -> list[str]:
        """Fully qualified names of the existing topics (and partitions) of one domain."""
        ...

    async def topic_exists(self, t: TopicName) -> bool:
        """``t`` exists as a non-partitioned topic or partition (loaded, or a stored ledger)."""
        ...

    async def create_topic(self, t: TopicName) -> None: ...

    async def delete_topic(self, t: TopicName, force: bool) -> None: ...

    async def topic_stats(self, t: TopicName) -> dict[str, Any]:
        """Pulsar's TopicStats JSON shape."""
        ...

    async def topic_internal_stats(self, t: TopicName) -> dict[str, Any]:
        """Pulsar's PersistentTopicInternalStats JSON shape."""
        ...

    async def list_subscriptions(self, t: TopicName) -> list[str]: ...

    async def create_subscription(
        self, t: TopicName, sub: str, position: MessageIdData
    ) -> None: ...

    async def delete_subscription(self, t: TopicName, sub: str, force: bool) -> None: ...

    async def skip_messages(self, t: TopicName, sub: str, n: int) -> None: ...

    async def skip_all(self, t: TopicName, sub: str) -> None: ...

    async def reset_cursor_to_time(self, t: TopicName, sub: str, timestamp_ms: int) -> None: ...

    async def reset_cursor_to_id(
        self, t: TopicName, sub: str, ledger_id: int, entry_id: int
    ) -> None: ...

    async def expire_messages(self, t: TopicName, sub: str, seconds: int) -> None: ...

    async def unload_topic(self, t: TopicName) -> None: ...

    async def terminate_topic(self, t: TopicName) -> MessageIdData:
        """End a persistent non-partitioned topic's log: its last message id."""
        ...

    async def peek_message(self, t: TopicName, sub: str, n: int) -> MessageView:
        """The subscription's ``n``-th unacknowledged message (1 is the first), cursor unmoved."""
        ...

    async def examine_message(self, t: TopicName, initial: str, n: int) -> MessageView:
        """The ``n``-th message from the ``earliest`` or back from the ``latest``."""
        ...

    async def get_message_by_id(
        self, t: TopicName, ledger_id: int, entry_id: int
    ) -> MessageView: ...

    async def last_message_id(self, t: TopicName) -> MessageIdData: ...

    async def compact(self, t: TopicName) -> None:
        """Start compacting ``t`` in the background (CompactionInProgress if it already is)."""
        ...

    async def compaction_status(self, t: TopicName) -> dict[str, str]:
        """Pulsar's LongRunningProcessStatus: ``{"status": ..., "lastError": ...}``."""
        ...

    async def partitions_auto_created(self, t: TopicName) -> int:
        """``t``'s partition count, creating it as partitioned first where auto-creation says so."""
        ...

    def check_persistence(self, persistence: PersistencePolicies) -> PersistencePolicies:
        """``persistence`` if within the broker's bounds (managedLedgerMaxEnsembleSize, ...);
        else ``InvalidPolicies`` (412) naming the bound."""
        ...

    async def policies_changed(self, ns: NamespaceName, policies: Policies) -> None:
        """``ns``'s policies were changed here to ``policies`` (as stored): apply what applies
        at once (retention, persistence)."""
        ...
