"""How the proxy reaches a broker's binary port: plain, or TLS (``tls_enabled_with_broker``).

Brokers are named by the ``host:port`` of their plain listener everywhere in the proxy (the
registry's key, the links, the relays). :meth:`BrokerDial.target` turns that name into what
to dial: the same address in plain text, or with TLS the broker's registered
``pulsar+ssl://`` address and the client context (the trust file of
``broker_client_trust_certs_file_path``, the proxy's own certificate for brokers that require
one, hostname verification by ``tls_hostname_verification_enabled``). A broker without a TLS
URL is then refused (:class:`~magnetar.proxy.errors.BrokerWithoutTls`), never dialled in plain.

Pure lookups over the discovery's current view; safe from any task of the proxy's loop.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass

from magnetar.proxy.discovery import BrokerDiscovery
from magnetar.proxy.errors import BrokerWithoutTls


def split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host, int(port)


@dataclass(frozen=True)
class DialTarget:
    host: str
    port: int
    ssl: ssl.SSLContext | None = None

    @property
    def server_hostname(self) -> str | None:
        return self.host if self.ssl is not None else None


class BrokerDial:
    """Plain (``context`` None) or TLS dialling of brokers (module docstring)."""

    def __init__(self, discovery: BrokerDiscovery | None, context: ssl.SSLContext | None) -> None:
        self._discovery = discovery
        self.context = context

    def target(self, address: str) -> DialTarget:
        """What to dial for the broker whose plain listener is ``address``."""
        if self.context is None or self._discovery is None:
            return DialTarget(*split_address(address))
        broker = self._discovery.by_service_address(address)
        tls_address = broker.tls_address if broker is not None else None
        if tls_address is None:
            raise BrokerWithoutTls(address)
        return DialTarget(*split_address(tls_address), self.context)


def broker_client_context(
    trust_certs_file: str, cert_file: str, key_file: str, verify_hostname: bool
) -> ssl.SSLContext:
    """The proxy's client context towards brokers (Pulsar's brokerClient* proxy settings)."""
    ctx = ssl.create_default_context(cafile=trust_certs_file or None)
    if cert_file:
        ctx.load_cert_chain(cert_file, key_file or None)
    ctx.check_hostname = verify_hostname
    return ctx
