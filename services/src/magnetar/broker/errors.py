"""Errors of the broker, and their rows in THE ServerError table (``magnetar.protocol.errors``).

Two families, both raised by this package:

* :class:`BrokerError` and its subclasses: topics, producers, consumers, subscriptions and
  backlog quotas, as a client meets them on the binary protocol (some reach the admin API too).
* :class:`ResourceError` and its subclasses: the broker's persisted resources (clusters,
  tenants, namespaces, policies and partitioned-topic metadata, in
  :mod:`magnetar.broker.resources`) and the admin topic operations (the ``TopicService`` of
  :mod:`magnetar.admin.service`). None is retryable: each names a state of the metadata that
  another call must change first. A malformed policy document is
  :class:`magnetar.policies.InvalidPolicies`, shared with the admin client.

Importing this module registers every broker error, and the managed-ledger and naming errors a
client can meet, with :func:`magnetar.protocol.errors.register_server_error`; the connection
answers a failed request with ``server_error_for(exc)``. The admin HTTP layer maps errors to
statuses in its one table (:mod:`magnetar.admin.errors`). ``retryable`` says whether the same
request may succeed later without any other change (a client reconnect, a topic reload).
"""

from __future__ import annotations

from magnetar.errors import MagnetarError
from magnetar.managed_ledger.errors import (
    CursorNotFound,
    ManagedLedgerClosed,
    ManagedLedgerError,
    ManagedLedgerFenced,
    ManagedLedgerTerminated,
    TooManyPendingAdds,
)
from magnetar.naming import InvalidTopicName
from magnetar.protocol.errors import register_server_error
from magnetar.schema import IncompatibleSchema, InvalidSchema, SchemaNotFound
from magnetar.wire import pulsar_api_pb2 as pb


class BrokerError(MagnetarError):
    """Base class of broker errors."""


class TopicNotFound(BrokerError):
    def __init__(self, topic: str) -> None:
        super().__init__(f"topic {topic} not found")
        self.topic = topic


class TopicClosed(BrokerError):
    """The topic is being closed or unloaded; a reconnect reaches its next incarnation."""

    retryable = True

    def __init__(self, topic: str) -> None:
        super().__init__(f"topic {topic} is being closed")
        self.topic = topic


class ServiceNotReady(BrokerError):
    retryable = True


class StaleBundle(ServiceNotReady):
    """A namespace bundle that was split meanwhile: the caller redoes its lookup."""

    def __init__(self, bundle: str) -> None:
        super().__init__(f"Namespace bundle {bundle} was split; please redo the lookup")
        self.bundle = bundle


class ProducerBusy(BrokerError):
    def __init__(self, topic: str, producer_name: str) -> None:
        super().__init__(f"producer {producer_name!r} is already connected to {topic}")
        self.topic = topic
        self.producer_name = producer_name


class ProducerFenced(BrokerError):
    """An exclusive producer took the topic (ExclusiveWithFencing), or the producer's topic
    epoch is older than the topic's: it may never publish again (Pulsar's PIP-68)."""

    def __init__(self, topic: str, reason: str) -> None:
        super().__init__(f"producer fenced on {topic}: {reason}")
        self.topic = topic
        self.reason = reason


class TopicTerminated(BrokerError):
    """The topic was terminated: no producer may join and nothing more may be published."""

    def __init__(self, topic: str) -> None:
        super().__init__(f"topic {topic} was already terminated")
        self.topic = topic


class MessageNotFound(BrokerError):
    """No stored message where the admin asked (past the end, trimmed, or nothing unacked)."""

    def __init__(self, topic: str, where: str) -> None:
        super().__init__(f"Message not found: {where} of {topic}")
        self.topic = topic


class InvalidMessagePosition(BrokerError):
    """A peek or examine position that cannot name a message (it counts from 1)."""

    def __init__(self, position: int) -> None:
        super().__init__(f"messagePosition must be 1 or more, got {position}")
        self.position = position


class ConsumerBusy(BrokerError):
    def __init__(self, subscription: str, reason: str) -> None:
        super().__init__(f"subscription {subscription!r}: {reason}")
        self.subscription = subscription


class SubscriptionNotFound(BrokerError):
    def __init__(self, subscription: str) -> None:
        super().__init__(f"subscription {subscription!r} not found")
        self.subscription = subscription


class ConsumerNotFound(BrokerError):
    def __init__(self, consumer_id: int) -> None:
        super().__init__(f"consumer {consumer_id} not found")
        self.consumer_id = consumer_id


class ProducerNotFound(BrokerError):
    def __init__(self, producer_id: int) -> None:
        super().__init__(f"producer {producer_id} not found")
        self.producer_id = producer_id


class NotAllowed(BrokerError):
    """The request is well-formed but not allowed in this state (e.g. unsubscribe of shared)."""


class MetadataProblem(BrokerError):
    """Pulsar's MetadataError: unknown ids, unsubscribe blocked by other consumers."""


class UnsupportedRequest(BrokerError):
    """A command the broker does not implement."""


class ProducerBlockedQuotaExceededError(BrokerError):
    """producer_request_hold: the client retries until the backlog drops (or it times out)."""

    retryable = True

    def __init__(self, topic: str, quota_type: str) -> None:
        super().__init__(f"cannot create producer on {topic}: backlog quota {quota_type} exceeded")
        self.topic = topic
        self.quota_type = quota_type


class ProducerBlockedQuotaExceededException(BrokerError):
    """producer_exception: the client fails the producer and its pending sends."""

    def __init__(self, topic: str, quota_type: str) -> None:
        super().__init__(f"cannot create producer on {topic}: backlog quota {quota_type} exceeded")
        self.topic = topic
        self.quota_type = quota_type


# ---------------------------------------------------------------- persisted resources


class ResourceError(MagnetarError):
    """Base class of resource errors; ``reason`` is the text a user sees."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ClusterNotFound(ResourceError):
    def __init__(self, cluster: str) -> None:
        super().__init__(f"Cluster {cluster} does not exist")
        self.cluster = cluster


class ClusterExists(ResourceError):
    def __init__(self, cluster: str) -> None:
        super().__init__(f"Cluster {cluster} already exists")
        self.cluster = cluster


class TenantNotFound(ResourceError):
    def __init__(self, tenant: str) -> None:
        super().__init__(f"Tenant {tenant} does not exist")
        self.tenant = tenant


class TenantExists(ResourceError):
    def __init__(self, tenant: str) -> None:
        super().__init__(f"Tenant {tenant} already exists")
        self.tenant = tenant


class TenantNotEmpty(ResourceError):
    """A tenant with namespaces cannot be deleted."""

    def __init__(self, tenant: str) -> None:
        super().__init__(f"The tenant {tenant} still has active namespaces")
        self.tenant = tenant


class UnknownClusters(ResourceError):
    """A tenant names clusters that do not exist."""

    def __init__(self, clusters: list[str]) -> None:
        super().__init__(f"Clusters {sorted(clusters)} do not exist")
        self.clusters = sorted(clusters)


class ReplicationClusterRefused(ResourceError):
    """A namespace's replication clusters name a cluster that does not exist or that its
    tenant may not use (Pulsar answers 403 to both)."""


class NamespaceNotFound(ResourceError):
    def __init__(self, namespace: str) -> None:
        super().__init__(f"Namespace {namespace} does not exist")
        self.namespace = namespace


class NamespaceExists(ResourceError):
    def __init__(self, namespace: str) -> None:
        super().__init__(f"Namespace {namespace} already exists")
        self.namespace = namespace


class NamespaceNotEmpty(ResourceError):
    """A namespace that still has topics cannot be deleted without force."""

    def __init__(self, namespace: str) -> None:
        super().__init__(f"Cannot delete non empty namespace {namespace}")
        self.namespace = namespace


class PartitionedTopicNotFound(ResourceError):
    def __init__(self, topic: str) -> None:
        super().__init__(f"Partitioned topic {topic} does not exist")
        self.topic = topic


class PartitionedTopicExists(ResourceError):
    def __init__(self, topic: str) -> None:
        super().__init__(f"Partitioned topic {topic} already exists")
        self.topic = topic


class InvalidPartitionCount(ResourceError):
    """A partition count that is not a positive integer."""

    def __init__(self, count: object) -> None:
        super().__init__(f"Number of partitions should be more than 0, got {count!r}")
        self.count = count


class PartitionCountNotIncreased(ResourceError):
    """Partitions can only be added, never removed."""

    def __init__(self, topic: str, current: int, requested: int) -> None:
        super().__init__(
            f"Number of new partitions must be greater than existing number of partitions"
            f" of {topic} ({requested} <= {current})"
        )
        self.topic = topic
        self.current = current
        self.requested = requested


class InvalidResourceName(ResourceError):
    """A cluster, tenant or namespace name Pulsar would not accept."""


# Raised by the TopicService (magnetar.admin.service) implementation for admin operations.


class TopicExists(ResourceError):
    def __init__(self, topic: str) -> None:
        super().__init__(f"This topic already exists: {topic}")
        self.topic = topic


class SubscriptionExists(ResourceError):
    def __init__(self, topic: str, subscription: str) -> None:
        super().__init__(f"Subscription {subscription} already exists for topic {topic}")
        self.topic = topic
        self.subscription = subscription


class TopicBusy(ResourceError):
    """Delete without force of a topic that still has producers or subscriptions."""

    def __init__(self, topic: str) -> None:
        super().__init__(f"Topic {topic} has active producers/subscriptions")
        self.topic = topic


class SubscriptionBusy(ResourceError):
    """Delete without force of a subscription that still has consumers."""

    def __init__(self, topic: str, subscription: str) -> None:
        super().__init__(f"Subscription {subscription} of {topic} has active connected consumers")
        self.topic = topic
        self.subscription = subscription


_TABLE: list[tuple[type[BaseException], pb.ServerError.ValueType]] = [
    (InvalidTopicName, pb.InvalidTopicName),
    (TopicNotFound, pb.TopicNotFound),
    (TopicClosed, pb.ServiceNotReady),
    (ServiceNotReady, pb.ServiceNotReady),
    (ProducerBusy, pb.ProducerBusy),
    (ProducerFenced, pb.ProducerFenced),
    (TopicTerminated, pb.TopicTerminatedError),
    (ConsumerBusy, pb.ConsumerBusy),
    (SubscriptionNotFound, pb.SubscriptionNotFound),
    (ConsumerNotFound, pb.MetadataError),
    (ProducerNotFound, pb.MetadataError),
    (MetadataProblem, pb.MetadataError),
    (NotAllowed, pb.NotAllowedError),
    (UnsupportedRequest, pb.NotAllowedError),
    (ManagedLedgerError, pb.PersistenceError),
    (ManagedLedgerFenced, pb.ServiceNotReady),
    (ManagedLedgerClosed, pb.ServiceNotReady),
    (ManagedLedgerTerminated, pb.TopicTerminatedError),
    (TooManyPendingAdds, pb.TooManyRequests),
    (CursorNotFound, pb.SubscriptionNotFound),
    (ProducerBlockedQuotaExceededError, pb.ProducerBlockedQuotaExceededError),
    (ProducerBlockedQuotaExceededException, pb.ProducerBlockedQuotaExceededException),
    (IncompatibleSchema, pb.IncompatibleSchema),
    (InvalidSchema, pb.IncompatibleSchema),  # Pulsar's InvalidSchemaDataException
    (SchemaNotFound, pb.TopicNotFound),  # GET_SCHEMA's "Topic not found or no-schema"
]

for _error, _code in _TABLE:
    register_server_error(_error, _code)
