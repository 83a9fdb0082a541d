"""Errors of the admin HTTP client, and THE table from HTTP statuses to them.

Every error the server answers carries Pulsar's ``{"reason": "..."}`` body; the client raises
the class for its status with ``status`` and ``reason`` as fields, so a caller can ``except
NotFound`` or read ``err.reason``. Statuses follow Pulsar's admin API (see
``magnetar.admin.errors`` on the server side): 404 missing, 409 already exists / not empty,
412 invalid name or policy or still in use, 405 not allowed on a partitioned topic, 406 a bad
partition count, 422 fewer partitions than before.

``retryable`` is true only where trying the same call again later may succeed without any
change: 503 (the service or its store is not ready), 504, a refused connection and a deadline.
These classes live apart from ``magnetar.client.errors`` (the binary client's) and never
import httpx, so that callers can catch them without the HTTP library.
"""

from __future__ import annotations

from typing import ClassVar

from magnetar.errors import MagnetarError, Timeout, Unavailable


class AdminError(MagnetarError):
    """An admin call failed. ``status`` is the HTTP status (0 when there was no answer)."""

    status_family: ClassVar[str] = ""

    def __init__(self, reason: str, status: int = 0) -> None:
        super().__init__(f"{reason} (HTTP {status})" if status else reason)
        self.reason = reason
        self.status = status


class AdminClientError(AdminError):
    """4xx: the request was wrong for the server's current state; repeating it will not help."""

    status_family = "4xx"


class BadRequest(AdminClientError):
    """400: the body or a parameter is not what the route expects."""


class Unauthorized(AdminClientError):
    """401: no or bad credentials."""


class Forbidden(AdminClientError):
    """403: the role may not do this."""


class NotFound(AdminClientError):
    """404: the cluster, tenant, namespace, topic or subscription does not exist."""


class NotAllowed(AdminClientError):
    """405: the operation is refused on this kind of topic (e.g. skip on a partitioned topic)."""


class NotAcceptable(AdminClientError):
    """406: e.g. a partition count that is not positive."""


class Conflict(AdminClientError):
    """409: it already exists, or it still has children (delete without force)."""


class PreconditionFailed(AdminClientError):
    """412: an invalid name or policy value, or a topic/subscription still in use."""


class Unprocessable(AdminClientError):
    """422: e.g. fewer partitions than the topic already has."""


class AdminServerError(AdminError):
    """5xx: the server failed."""

    status_family = "5xx"


class ServiceUnavailable(AdminServerError):
    """503: the broker or its metadata store is not ready."""

    retryable = True


class GatewayTimeout(AdminServerError):
    """504: the server ran past its own deadline."""

    retryable = True


class AdminUnreachable(AdminError, Unavailable):
    """No HTTP answer at all: connection refused or reset, DNS failure."""

    retryable = True


class AdminTimeout(AdminError, Timeout):
    """The call ran past the client's deadline (``timeout_s``)."""

    retryable = True


class UnexpectedResponse(AdminError):
    """A 2xx answer whose body is not the JSON this call expects (a server or version mismatch)."""


HTTP_ERRORS: dict[int, type[AdminError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: NotAllowed,
    406: NotAcceptable,
    409: Conflict,
    412: PreconditionFailed,
    422: Unprocessable,
    503: ServiceUnavailable,
    504: GatewayTimeout,
}


def error_for_status(status: int, reason: str) -> AdminError:
    """The exception for an HTTP error answer; unknown statuses fall back to their family."""
    cls = HTTP_ERRORS.get(status)
    if cls is None:
        cls = AdminServerError if status >= 500 else AdminClientError
    return cls(reason, status)
