"""Errors of Magnetar's asyncio Pulsar client.

Every class derives from :class:`ClientError` (a :class:`~magnetar.errors.MagnetarError`) and
says through ``retryable`` whether the same call may succeed later without any other change.

Errors a broker reports (``ERROR``, ``SEND_ERROR``, failed lookups ...) become
:class:`ServerErrorResponse` subclasses chosen by :func:`server_error` from the ``ServerError``
code; the code and the broker's message are kept as fields. A name the client cannot parse
raises :class:`magnetar.naming.InvalidTopicName`, shared with the broker. Values only; safe from
any task.
"""

from __future__ import annotations

from typing import ClassVar

from magnetar.errors import MagnetarError
from magnetar.wire import pulsar_api_pb2 as pb


class ClientError(MagnetarError):
    """Base class of the client's errors."""


class ClientClosed(ClientError):
    """The client, producer, consumer or reader was closed; the call cannot proceed."""


class ProducerClosed(ClientClosed):
    """The producer was closed (by the user, or for good after a fatal broker error)."""


class ConnectionFailed(ClientError):
    """A TCP connection or the CONNECT handshake with a broker failed."""

    retryable = True


class TlsVerificationFailed(ConnectionFailed):
    """The broker's TLS certificate is not trusted (or does not name the host dialled): no retry
    fixes it; the trust file or the hostname validation option must change."""

    retryable = False


class ConnectionLost(ClientError):
    """The connection closed while a request was outstanding or a handle was attached."""

    retryable = True


class OperationTimeout(ClientError):
    """A request to the broker got no answer before its deadline."""

    retryable = True


class ReceiveTimeout(OperationTimeout):
    """``receive(timeout_s)`` found no message in time."""


class SendTimeout(OperationTimeout):
    """A message was not acknowledged by the broker within the producer's send timeout."""


class ProducerQueueIsFull(ClientError):
    """The producer's pending queue is full and ``block_if_queue_full`` is off."""

    retryable = True


class MessageTooBig(ClientError):
    """The message (after compression) is larger than the broker's max_message_size."""


class InvalidConfiguration(ClientError):
    """An option value makes no sense (negative limits, unknown codec, bad URL ...)."""


class TooManyRedirects(ClientError):
    """A topic lookup kept redirecting past the bound."""

    retryable = True


class DecompressionError(ClientError):
    """A payload does not decompress with its codec, or not to its announced size."""


class ServerErrorResponse(ClientError):
    """The broker answered with an error; ``code`` is its ``ServerError`` value."""

    def __init__(self, code: pb.ServerError.ValueType, message: str) -> None:
        name = pb.ServerError.Name(code) if code in pb.ServerError.values() else str(code)
        super().__init__(f"{name}: {message}")
        self.code = code
        self.server_message = message

    # Whether a handle that hit this error while reconnecting must stop trying.
    fatal: ClassVar[bool] = False


class ServiceNotReady(ServerErrorResponse):
    retryable = True


class TooManyRequests(ServerErrorResponse):
    retryable = True


class MetadataError(ServerErrorResponse):
    retryable = True


class PersistenceError(ServerErrorResponse):
    retryable = True


class AuthenticationError(ServerErrorResponse):
    fatal = True


class AuthorizationError(ServerErrorResponse):
    fatal = True


class ConsumerBusy(ServerErrorResponse):
    retryable = True


class ProducerBusy(ServerErrorResponse):
    retryable = True


class ProducerBlockedQuotaExceeded(ServerErrorResponse):
    retryable = True


class ChecksumError(ServerErrorResponse):
    pass


class UnsupportedVersion(ServerErrorResponse):
    fatal = True


class TopicNotFound(ServerErrorResponse):
    pass


class SubscriptionNotFound(ServerErrorResponse):
    pass


class ConsumerNotFound(ServerErrorResponse):
    pass


class TopicTerminated(ServerErrorResponse):
    fatal = True


class InvalidTopicNameResponse(ServerErrorResponse):
    fatal = True


class IncompatibleSchema(ServerErrorResponse):
    fatal = True


class NotAllowed(ServerErrorResponse):
    fatal = True


class ProducerFenced(ServerErrorResponse):
    fatal = True


_BY_CODE: dict[int, type[ServerErrorResponse]] = {
    pb.MetadataError: MetadataError,
    pb.PersistenceError: PersistenceError,
    pb.AuthenticationError: AuthenticationError,
    pb.AuthorizationError: AuthorizationError,
    pb.ConsumerBusy: ConsumerBusy,
    pb.ServiceNotReady: ServiceNotReady,
    pb.ProducerBlockedQuotaExceededError: ProducerBlockedQuotaExceeded,
    pb.ProducerBlockedQuotaExceededException: ProducerBlockedQuotaExceeded,
    pb.ChecksumError: ChecksumError,
    pb.UnsupportedVersionError: UnsupportedVersion,
    pb.TopicNotFound: TopicNotFound,
    pb.SubscriptionNotFound: SubscriptionNotFound,
    pb.ConsumerNotFound: ConsumerNotFound,
    pb.TooManyRequests: TooManyRequests,
    pb.TopicTerminatedError: TopicTerminated,
    pb.ProducerBusy: ProducerBusy,
    pb.InvalidTopicName: InvalidTopicNameResponse,
    pb.IncompatibleSchema: IncompatibleSchema,
    pb.NotAllowedError: NotAllowed,
    pb.ProducerFenced: ProducerFenced,
}


def server_error(code: pb.ServerError.ValueType, message: str) -> ServerErrorResponse:
    """The exception for a broker's ``ServerError`` code (the base class for unmapped codes)."""
    return _BY_CODE.get(code, ServerErrorResponse)(code, message)


def gives_up_reconnecting(error: BaseException) -> bool:
    """True if a producer or consumer that got ``error`` while reattaching must stop trying."""
    return isinstance(error, ServerErrorResponse) and error.fatal
