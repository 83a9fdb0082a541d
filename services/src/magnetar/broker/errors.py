"""Errors of the broker, and their rows in THE ServerError table (``magnetar.protocol.errors``).

Importing this module registers every broker error, and the managed-ledger and naming errors a
client can meet, with :func:`magnetar.protocol.errors.register_server_error`; the connection
answers a failed request with ``server_error_for(exc)``. ``retryable`` says whether the same
request may succeed later without any other change (a client reconnect, a topic reload).
"""

from __future__ import annotations

from magnetar.errors import MagnetarError
from magnetar.managed_ledger.errors import (
    CursorNotFound,
    ManagedLedgerClosed,
    ManagedLedgerError,
    ManagedLedgerFenced,
    TooManyPendingAdds,
)
from magnetar.naming import InvalidTopicName
from magnetar.protocol.errors import register_server_error
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


class ProducerBusy(BrokerError):
    def __init__(self, topic: str, producer_name: str) -> None:
        super().__init__(f"producer {producer_name!r} is already connected to {topic}")
        self.topic = topic
        self.producer_name = producer_name


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


_TABLE: list[tuple[type[BaseException], pb.ServerError.ValueType]] = [
    (InvalidTopicName, pb.InvalidTopicName),
    (TopicNotFound, pb.TopicNotFound),
    (TopicClosed, pb.ServiceNotReady),
    (ServiceNotReady, pb.ServiceNotReady),
    (ProducerBusy, pb.ProducerBusy),
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
    (TooManyPendingAdds, pb.TooManyRequests),
    (CursorNotFound, pb.SubscriptionNotFound),
    (ProducerBlockedQuotaExceededError, pb.ProducerBlockedQuotaExceededError),
    (ProducerBlockedQuotaExceededException, pb.ProducerBlockedQuotaExceededException),
]

for _error, _code in _TABLE:
    register_server_error(_error, _code)
