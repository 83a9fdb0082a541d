"""Errors of the proxy, and their rows in THE ServerError table (``magnetar.protocol.errors``).

A client meets them as a ``LOOKUP_RESPONSE(Failed)``, a ``PARTITIONED_METADATA_RESPONSE`` with
an error, or an ``ERROR`` in place of ``CONNECTED``; an HTTP client as a ``503`` (no broker)
or ``502`` (a broker that did not answer). ``retryable`` says whether the same request may
succeed later without any other change (a broker registering, a lookup settling).
"""

from __future__ import annotations

from magnetar.errors import MagnetarError
from magnetar.protocol.errors import register_server_error
from magnetar.wire import pulsar_api_pb2 as pb


class ProxyError(MagnetarError):
    """Base class of proxy errors."""


class NoBrokerAvailable(ProxyError):
    """No broker is registered under ``/loadbalance/brokers``: nothing to look up through."""

    retryable = True

    def __init__(self) -> None:
        super().__init__(
            "no broker is registered in the metadata store; start a broker "
            "(magnetar broker --metadata URL) or check the proxy's --metadata URL"
        )


class NotARegisteredBroker(ProxyError):
    """A CONNECT asked to be relayed to an address that is not a registered broker."""

    def __init__(self, address: str) -> None:
        super().__init__(
            f"proxy_to_broker_url {address!r} is not a registered broker; look the topic up "
            "through the proxy and connect to the broker it names"
        )
        self.address = address


class BrokerUnreachable(ProxyError):
    """The broker did not accept a connection, or did not finish the handshake, in time."""

    retryable = True

    def __init__(self, broker: str, reason: str) -> None:
        super().__init__(f"broker {broker} is unreachable: {reason}")
        self.broker = broker


class BrokerRequestTimeout(ProxyError):
    """A request forwarded to a broker got no answer within the operation timeout."""

    retryable = True

    def __init__(self, broker: str, command: str, timeout_s: float) -> None:
        super().__init__(f"broker {broker} did not answer {command} within {timeout_s:g}s")
        self.broker = broker


class TooManyLookupRedirects(ProxyError):
    """The brokers kept redirecting a lookup (their ownership is moving, or they disagree)."""

    retryable = True

    def __init__(self, topic: str, hops: int) -> None:
        super().__init__(f"lookup of {topic} was redirected {hops} times; try again")
        self.topic = topic


class BrokerWithoutTls(ProxyError):
    """The proxy dials brokers with TLS (``tls_enabled_with_broker``) and this one registered
    no ``pulsar+ssl://`` URL."""

    retryable = False

    def __init__(self, broker: str) -> None:
        super().__init__(
            f"the broker {broker} serves no TLS port, and this proxy connects to brokers with "
            "TLS only (tls_enabled_with_broker): give the broker broker_service_port_tls"
        )
        self.broker = broker


def http_status_for(error: MagnetarError) -> int:
    """The status the proxy's HTTP port answers when it could not get a broker's answer
    (the proxy's one table; a broker's own answers pass through unchanged)."""
    if isinstance(error, NoBrokerAvailable):
        return 503
    if isinstance(error, BrokerRequestTimeout):
        return 504
    return 502  # a broker that refused the connection, or kept redirecting


register_server_error(NoBrokerAvailable, pb.ServiceNotReady)
register_server_error(NotARegisteredBroker, pb.NotAllowedError)
register_server_error(BrokerUnreachable, pb.ServiceNotReady)
register_server_error(BrokerRequestTimeout, pb.ServiceNotReady)
register_server_error(TooManyLookupRedirects, pb.ServiceNotReady)
register_server_error(BrokerWithoutTls, pb.ServiceNotReady)
