"""Admin errors, and THE table from domain errors to HTTP statuses (STYLE.md: exactly one).

Statuses follow Pulsar's admin API: 404 for a missing cluster/tenant/namespace/topic/subscription,
409 for "already exists" and for deleting a tenant or namespace that still has children, 412
(PRECONDITION_FAILED) for invalid names and policy values and for deleting what is still in use,
406 for a non-positive partition count, 422 for shrinking partitions and invalid schema
definitions, 409 for an incompatible schema, 405 for operations Pulsar
refuses on partitioned topics, 400 for bodies that are not the JSON the route expects.
Unknown errors are 500. The body is always ``{"reason": "..."}``.
"""

from __future__ import annotations

from magnetar.autorecovery.errors import NotDecommissioning, UnknownBookie
from magnetar.broker.compaction.errors import CompactionInProgress
from magnetar.broker.errors import (
    ClusterExists,
    ClusterNotFound,
    ConsumerBusy,
    InvalidMessagePosition,
    InvalidPartitionCount,
    InvalidResourceName,
    MessageNotFound,
    NamespaceExists,
    NamespaceNotEmpty,
    NamespaceNotFound,
    NotAllowed,
    PartitionCountNotIncreased,
    PartitionedTopicExists,
    PartitionedTopicNotFound,
    ReplicationClusterRefused,
    ServiceNotReady,
    SubscriptionBusy,
    SubscriptionExists,
    SubscriptionNotFound,
    TenantExists,
    TenantNotEmpty,
    TenantNotFound,
    TopicBusy,
    TopicClosed,
    TopicExists,
    TopicNotFound,
    UnknownClusters,
)
from magnetar.errors import MagnetarError, Timeout, Unavailable
from magnetar.managed_ledger.errors import CursorNotFound
from magnetar.metadata.errors import BadVersion, StoreUnavailable
from magnetar.naming import InvalidTopicName
from magnetar.policies import InvalidPolicies
from magnetar.schema import IncompatibleSchema, InvalidSchema, SchemaError


class AdminError(MagnetarError):
    """Base class of errors raised by the HTTP layer itself."""


class BadRequestBody(AdminError):
    """The request body (or a query parameter) is not what the route expects."""


class NotAllowedOnPartitionedTopic(AdminError):
    """Pulsar refuses some cursor operations on a partitioned topic as a whole."""

    def __init__(self, operation: str, topic: str) -> None:
        super().__init__(f"{operation} is not allowed for partitioned-topic {topic}")


# Most specific first: the first row whose class matches wins.
HTTP_STATUS: list[tuple[type[BaseException], int]] = [
    (BadRequestBody, 400),
    (InvalidTopicName, 412),
    (InvalidResourceName, 412),
    (InvalidPolicies, 412),
    (InvalidMessagePosition, 412),
    (UnknownClusters, 412),
    (TopicBusy, 412),
    (SubscriptionBusy, 412),
    (ConsumerBusy, 412),
    (InvalidPartitionCount, 406),
    (PartitionCountNotIncreased, 422),
    (NotAllowedOnPartitionedTopic, 405),
    (NotAllowed, 405),
    (ReplicationClusterRefused, 403),
    (ClusterNotFound, 404),
    (TenantNotFound, 404),
    (NamespaceNotFound, 404),
    (PartitionedTopicNotFound, 404),
    (TopicNotFound, 404),
    (SubscriptionNotFound, 404),
    (MessageNotFound, 404),
    (CursorNotFound, 404),
    (UnknownBookie, 404),
    (NotDecommissioning, 404),
    (ClusterExists, 409),
    (TenantExists, 409),
    (NamespaceExists, 409),
    (PartitionedTopicExists, 409),
    (TopicExists, 409),
    (CompactionInProgress, 409),
    (SubscriptionExists, 409),
    (TenantNotEmpty, 409),
    (NamespaceNotEmpty, 409),
    (BadVersion, 409),  # a CAS that kept losing: a concurrent modification
    (IncompatibleSchema, 409),
    (InvalidSchema, 422),
    (SchemaError, 404),  # SchemaNotFound: no schema, or no such version
    (TopicClosed, 503),
    (ServiceNotReady, 503),
    (StoreUnavailable, 503),
    (Unavailable, 503),
    (Timeout, 504),
]


def http_status_for(exc: BaseException) -> int:
    for cls, status in HTTP_STATUS:
        if isinstance(exc, cls):
            return status
    return 500


def reason_of(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None)
    if isinstance(exc, InvalidTopicName):
        return str(exc)  # its reason lacks the name
    return reason if isinstance(reason, str) and reason else str(exc) or type(exc).__name__
