"""Mutual-TLS authentication (Pulsar's ``AuthenticationProviderTls``, method ``tls``).

The role is the common name (CN) of the client certificate's subject. The certificate comes
in the shape ``ssl.SSLSocket.getpeercert()`` returns — ``{"subject": ((("commonName", "app"),),
...), "notAfter": ...}`` — which the TLS listener fills in once the handshake verified the chain
against the trusted CAs; without a certificate, or without a CN, the client is refused. The TLS
layer already refused an expired certificate, so no expiry is carried.
"""

from __future__ import annotations

from magnetar.authentication.errors import AuthenticationFailed
from magnetar.authentication.provider import Credentials, PeerCertificate, Principal

TLS_METHOD = "tls"


def common_name(certificate: PeerCertificate) -> str | None:
    """The subject's CN of a ``getpeercert()`` dict (the last one if there are several)."""
    found: str | None = None
    subject = certificate.get("subject", ())
    if not isinstance(subject, (tuple, list)):
        return None
    for rdn in subject:
        if not isinstance(rdn, (tuple, list)):
            continue
        for attribute in rdn:
            if (
                isinstance(attribute, (tuple, list))
                and len(attribute) == 2
                and attribute[0] == "commonName"
                and isinstance(attribute[1], str)
            ):
                found = attribute[1]
    return found


def role_of_certificate(certificate: PeerCertificate | None) -> str:
    """The role a client certificate proves: its subject's CN; AuthenticationFailed if none."""
    if not certificate:
        raise AuthenticationFailed("no client certificate: connect with TLS and a certificate")
    role = common_name(certificate)
    if not role:
        raise AuthenticationFailed("the client certificate's subject has no common name (CN)")
    return role


class TlsAuthenticationProvider:
    @property
    def method_name(self) -> str:
        return TLS_METHOD

    def authenticate(self, credentials: Credentials) -> Principal:
        return Principal(role_of_certificate(credentials.peer_certificate), TLS_METHOD)
