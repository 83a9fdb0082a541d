"""``magnetar consume``: receive, print and acknowledge messages of one subscription.

:func:`consume` subscribes, hands each message to ``emit`` (the CLI prints it), acknowledges
it, and returns the number received once it has ``count`` of them (``count == 0``: until
``timeout_s`` passes without a message, or forever; Ctrl-C cancels the run). With
``count > 0``, waiting ``timeout_s`` without a message raises
:class:`~magnetar.tools.errors.ConsumeTimeout`.
``timeout_s == 0`` waits forever. Acks are flushed by closing the consumer before returning.

Concurrency: runs on one event loop and owns its client; ``emit`` is called from that loop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from magnetar.client import InvalidConfiguration, Message, ReceiveTimeout, TlsOptions
from magnetar.client.receiver import parse_initial_position, parse_subscription_type
from magnetar.tools.errors import BadInput, ConsumeTimeout
from magnetar.tools.session import DEFAULT_SERVICE_URL, open_client


@dataclass(frozen=True)
class ConsumeRequest:
    """Everything one ``magnetar consume`` run needs."""

    topic: str
    subscription: str
    subscription_type: str = "exclusive"
    count: int = 1
    position: str = "latest"
    timeout_s: float = 0.0
    service_url: str = DEFAULT_SERVICE_URL
    operation_timeout_s: float = 30.0
    tls: TlsOptions | None = None

    def __post_init__(self) -> None:
        if self.count < 0:
            raise BadInput(f"-n/--num-messages cannot be negative, got {self.count}")
        if self.timeout_s < 0:
            raise BadInput(f"--timeout cannot be negative, got {self.timeout_s:g}")
        try:
            parse_subscription_type(self.subscription_type)
            parse_initial_position(self.position)
        except InvalidConfiguration as exc:
            raise BadInput(str(exc)) from exc


async def consume(
    request: ConsumeRequest,
    emit: Callable[[Message], None],
) -> int:
    """Receive, emit and acknowledge messages; the number received (see the module doc)."""
    received = 0
    timeout = request.timeout_s or None
    async with open_client(
        request.service_url,
        request.topic,
        operation_timeout_s=request.operation_timeout_s,
        tls=request.tls,
    ) as client:
        consumer = await client.subscribe(
            request.topic,
            request.subscription,
            subscription_type=request.subscription_type,
            initial_position=request.position,
        )
        try:
            while request.count == 0 or received < request.count:
                try:
                    message = await consumer.receive(timeout)
                except ReceiveTimeout:
                    if request.count == 0:
                        break
                    raise ConsumeTimeout(received, request.count, request.timeout_s) from None
                emit(message)
                consumer.acknowledge(message)
                received += 1
        finally:
            await consumer.close()
    return received
