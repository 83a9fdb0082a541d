"""Errors of the broker's persisted resources: clusters, tenants, namespaces, policies and
partitioned-topic metadata (:mod:`magnetar.broker.resources`). A malformed policy document is
:class:`magnetar.policies.InvalidPolicies`, shared with the admin client.

Kept apart from :mod:`magnetar.broker.errors` only because the two were written in parallel;
they belong to the same package and may be merged into it. None is retryable: each names a state
of the metadata that another call must change first. The admin HTTP layer maps them to statuses
in its one table (:mod:`magnetar.admin.errors`).
"""

from __future__ import annotations

from magnetar.errors import MagnetarError


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
