"""Errors of the subscription cores: why a consumer may not join a subscription.

Each class names the condition and carries the reason text that the broker puts in the
``ERROR.message`` of its SUBSCRIBE answer. The Pulsar ``ServerError`` codes are registered in
the protocol's one table (:func:`magnetar.protocol.errors.register_server_error`) at import time:
``ConsumerBusy`` for a second consumer on an Exclusive subscription or a subscription of another
type, ``ConsumerAssignError`` for Key_Shared hash ranges that cannot be assigned. None of them is
retryable: the same SUBSCRIBE fails again until the other consumers change.
"""

from __future__ import annotations

from magnetar.errors import MagnetarError
from magnetar.protocol.errors import register_server_error
from magnetar.wire import pulsar_api_pb2 as pb


class DispatchError(MagnetarError):
    """Base class of subscription-core errors."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ConsumerBusy(DispatchError):
    """The subscription cannot take this consumer (Exclusive taken, or another type/mode)."""


class ConsumerAssignError(DispatchError):
    """Key_Shared could not give the consumer a hash range (invalid, overlapping, none left)."""


register_server_error(ConsumerBusy, pb.ConsumerBusy)
register_server_error(ConsumerAssignError, pb.ConsumerAssignError)
