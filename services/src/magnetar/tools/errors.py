"""Errors of the everyday tools, and the one place that turns any failure into a user's sentence.

A :class:`ToolError` carries the exact text ``magnetar produce|consume|perf`` prints after
``error:``; :func:`explain` maps the client's errors (unreachable broker, missing topic or tenant,
busy subscription, timeouts ...) to such a sentence naming what is wrong and what to do.
Values only; safe from any task or thread.
"""

from __future__ import annotations

from magnetar.client import errors as client_errors
from magnetar.errors import MagnetarError
from magnetar.naming import InvalidTopicName, client_topic_name


class ToolError(MagnetarError):
    """A failure the tool reports as one ``error: ...`` line and exit code 1."""


class BadInput(ToolError):
    """An argument or input (property, file, option combination) the tool cannot use."""


class ConsumeTimeout(ToolError):
    """``consume`` waited ``timeout_s`` without a message and has fewer than it was asked for."""

    def __init__(self, received: int, expected: int, timeout_s: float) -> None:
        super().__init__(
            f"timed out after {timeout_s:g}s without a message: received {received} of"
            f" {expected} messages (raise --timeout, or check the topic has messages and"
            " --position)"
        )
        self.received = received
        self.expected = expected


class OfficialClientMissing(ToolError):
    """``--use-official-client`` without the ``pulsar-client`` package installed."""


def _namespace_hint(topic: str | None) -> str:
    if topic is None:
        return ""
    try:
        name = client_topic_name(topic)
    except InvalidTopicName:
        return ""
    return (
        f"; check that tenant '{name.tenant}' and namespace '{name.namespace}' exist"
        f" (magnetar admin namespaces list {name.tenant})"
    )


def explain(error: BaseException, *, service_url: str, topic: str | None = None) -> str:
    """One line for the user: what went wrong and what to do about it."""
    if isinstance(error, ToolError):
        return str(error)
    if isinstance(error, client_errors.ConnectionFailed):
        return (
            f"cannot connect to the broker at {service_url} ({error}); is it running?"
            " Point --service-url (or MAGNETAR_SERVICE_URL) at a reachable broker"
        )
    if isinstance(error, client_errors.InvalidConfiguration):
        return f"{error}; a service URL looks like pulsar://127.0.0.1:6650"
    if isinstance(error, InvalidTopicName):
        return f"{error}; use persistent://tenant/namespace/topic or a short name"
    if isinstance(error, client_errors.TopicNotFound):
        return f"the broker says {error.server_message or error}{_namespace_hint(topic)}"
    if isinstance(error, client_errors.AuthenticationError):
        return (
            f"the broker refused access: {error}; give a valid token with --auth-token or "
            "--auth-token-file"
        )
    if isinstance(error, client_errors.AuthorizationError):
        return (
            f"the broker refused access: {error}; ask an admin to grant the permission "
            "(magnetar admin namespaces|topics grant-permission)"
        )
    if isinstance(error, client_errors.ConsumerBusy):
        return (
            f"the subscription is busy ({error.server_message or error}); an exclusive"
            " subscription allows one consumer: use another -s/--subscription or -t shared"
        )
    if isinstance(error, client_errors.ConnectionLost):
        return f"lost the connection to {service_url} ({error}); retry when the broker is up"
    if isinstance(error, client_errors.OperationTimeout):
        return f"no answer from the broker at {service_url} in time ({error})"
    if isinstance(error, client_errors.ServerErrorResponse):
        return f"the broker refused: {error}{_namespace_hint(topic)}"
    return f"{type(error).__name__}: {error}"
