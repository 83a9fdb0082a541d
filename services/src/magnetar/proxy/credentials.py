"""The proxy's own credential towards brokers, and what it tells them about its clients.

Pulsar's proxy.conf names: ``broker_client_authentication_plugin`` (``token``, or the Java
client's ``org.apache.pulsar.client.impl.auth.AuthenticationToken``) and
``broker_client_authentication_parameters`` (``token:<jwt>``, ``file:///path`` to a file holding
the token, or the token itself). :func:`broker_credential` reads it once at start (a blocking
file read); the proxy then sends it in the CONNECT of its lookup links and, when it
authenticates clients itself, of every relay, with the client's role as ``original_principal``
(and the client's own credential as ``original_auth_*`` only with
``forward_authorization_credentials``).

Pure values; safe from any task. The credential never appears in a repr or a log line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from magnetar.authentication.client_token import client_token


@dataclass(frozen=True)
class BrokerCredential:
    method: str
    data: bytes = field(repr=False)


def broker_credential(plugin: str, parameters: str) -> BrokerCredential | None:
    """The credential the settings name (None without a plugin); ValueError says what is wrong."""
    token = client_token(plugin, parameters, "broker_client_authentication")
    return None if token is None else BrokerCredential("token", token.encode())
