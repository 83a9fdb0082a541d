"""Authentication: who a client is (Pulsar's authentication providers and tokens).

Importable by every service (broker, proxy) and by the tools; depends only on the protocol's
error table. :mod:`.jwt_tokens` is the one adapter over PyJWT and cryptography; :mod:`.keys`
reads key references; :mod:`.provider` is the seam; :mod:`.token` and :mod:`.tls` are the
providers; :mod:`.service` picks one per request.
"""

from magnetar.authentication.errors import AuthenticationFailed, CredentialExpired, InvalidKey
from magnetar.authentication.provider import (
    AuthenticationProvider,
    Credentials,
    PeerCertificate,
    Principal,
)
from magnetar.authentication.service import (
    AuthenticationConfig,
    AuthenticationService,
    build_authentication,
    provider_method,
)
from magnetar.authentication.tls import TlsAuthenticationProvider, role_of_certificate
from magnetar.authentication.token import TokenAuthenticationProvider

__all__ = [
    "AuthenticationConfig",
    "AuthenticationFailed",
    "AuthenticationProvider",
    "AuthenticationService",
    "CredentialExpired",
    "Credentials",
    "InvalidKey",
    "PeerCertificate",
    "Principal",
    "TlsAuthenticationProvider",
    "TokenAuthenticationProvider",
    "build_authentication",
    "provider_method",
    "role_of_certificate",
]
