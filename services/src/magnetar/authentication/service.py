"""The authentication service: the enabled providers by method name, and how each entry point
picks one (Pulsar's ``AuthenticationService``).

Providers are named as Pulsar names its methods — ``token``, ``tls``, ``none`` — and Pulsar's
provider class names (``org.apache.pulsar.broker.authentication.AuthenticationProviderToken``)
are accepted for them, so a broker.conf value carries over. ``none`` lets a client that
presents no credential in as ``anonymous_user_role`` (Pulsar's ``anonymousUserRole``).

Binary protocol: CONNECT's ``auth_method_name`` picks the provider (none given: ``none``).
HTTP: an ``Authorization: Bearer`` header goes to ``token``; else a client certificate goes to
``tls``; else ``none``. :func:`build_authentication` reads the keys (blocking file reads): call
it once at process start, where a bad key ends the start with a message naming the setting.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from magnetar.authentication.errors import AuthenticationFailed, InvalidKey
from magnetar.authentication.jwt_tokens import (
    KEY_PAIR_ALGORITHMS,
    VerificationKey,
    public_verification_key,
    secret_verification_key,
)
from magnetar.authentication.keys import read_key
from magnetar.authentication.provider import (
    AuthenticationProvider,
    Credentials,
    PeerCertificate,
    Principal,
)
from magnetar.authentication.tls import TLS_METHOD, TlsAuthenticationProvider
from magnetar.authentication.token import TOKEN_METHOD, TokenAuthenticationProvider
from magnetar.wire import pulsar_api_pb2 as pb

NONE_METHOD = "none"
_PULSAR = "org.apache.pulsar.broker.authentication."
PROVIDER_NAMES: Mapping[str, str] = {
    TOKEN_METHOD: TOKEN_METHOD,
    TLS_METHOD: TLS_METHOD,
    NONE_METHOD: NONE_METHOD,
    _PULSAR + "AuthenticationProviderToken": TOKEN_METHOD,
    _PULSAR + "AuthenticationProviderTls": TLS_METHOD,
}


@dataclass(frozen=True)
class AnonymousProvider:
    """Method ``none``: no credential, one fixed role."""

    role: str

    @property
    def method_name(self) -> str:
        return NONE_METHOD

    def authenticate(self, credentials: Credentials) -> Principal:
        return Principal(self.role, NONE_METHOD)


@dataclass(frozen=True)
class AuthenticationConfig:
    """The broker.conf authentication settings, as values."""

    providers: tuple[str, ...]
    token_secret_key: str = ""
    token_public_key: str = ""
    token_public_alg: str = "RS256"
    token_auth_claim: str = "sub"
    token_allowed_clock_skew_s: float = 0.0
    anonymous_user_role: str = ""


class AuthenticationService:
    """The enabled providers, by method name."""

    def __init__(self, providers: Iterable[AuthenticationProvider]) -> None:
        self._providers = {p.method_name: p for p in providers}
        if not self._providers:
            raise ValueError("authentication needs at least one provider")

    @property
    def methods(self) -> tuple[str, ...]:
        return tuple(self._providers)

    def authenticate(self, method: str | None, credentials: Credentials) -> Principal:
        """Authenticate with the provider of ``method`` (no method: ``none``)."""
        name = method or NONE_METHOD
        provider = self._providers.get(name)
        if provider is None:
            if name == NONE_METHOD:
                raise AuthenticationFailed(
                    "authentication is required: connect with one of the methods "
                    f"{list(self._providers)}"
                )
            raise AuthenticationFailed(
                f"authentication method {name!r} is not enabled here; use one of "
                f"{list(self._providers)}"
            )
        return provider.authenticate(credentials)

    def authenticate_connect(
        self, connect: pb.CommandConnect, peer_certificate: PeerCertificate | None = None
    ) -> Principal:
        """Authenticate a binary CONNECT: its ``auth_method_name`` and ``auth_data`` (and, over
        TLS, the peer certificate), as a broker and a proxy both read them."""
        method = connect.auth_method_name if connect.HasField("auth_method_name") else None
        data = connect.auth_data if connect.HasField("auth_data") else None
        return self.authenticate(method, Credentials(data, peer_certificate))

    def authenticate_http(
        self, authorization: str | None, peer_certificate: PeerCertificate | None = None
    ) -> Principal:
        """Authenticate an HTTP request from its ``Authorization`` header or certificate."""
        if authorization:
            scheme, _, token = authorization.strip().partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                raise AuthenticationFailed("the Authorization header must be 'Bearer <token>'")
            if TOKEN_METHOD not in self._providers:
                raise AuthenticationFailed("token authentication is not enabled here")
            return self.authenticate(TOKEN_METHOD, Credentials(token.strip().encode()))
        if peer_certificate and TLS_METHOD in self._providers:
            return self.authenticate(TLS_METHOD, Credentials(peer_certificate=peer_certificate))
        if NONE_METHOD in self._providers:
            return self.authenticate(NONE_METHOD, Credentials())
        raise AuthenticationFailed(
            "authentication is required: send 'Authorization: Bearer <token>'"
        )


def provider_method(name: str) -> str:
    """The method a provider name (Pulsar's or ours) stands for; ValueError if unknown."""
    method = PROVIDER_NAMES.get(name.strip())
    if method is None:
        known = ", ".join(n for n in PROVIDER_NAMES if "." not in n)
        raise ValueError(f"unknown authentication provider {name!r}: use {known}")
    return method


def build_authentication(config: AuthenticationConfig) -> AuthenticationService:
    """The service for ``config``; InvalidKey or ValueError name what is missing or wrong."""
    providers: list[AuthenticationProvider] = []
    for method in dict.fromkeys(provider_method(n) for n in config.providers):
        if method == TOKEN_METHOD:
            providers.append(
                TokenAuthenticationProvider(
                    _token_key(config), config.token_auth_claim, config.token_allowed_clock_skew_s
                )
            )
        elif method == TLS_METHOD:
            providers.append(TlsAuthenticationProvider())
        else:
            providers.append(AnonymousProvider(config.anonymous_user_role or "anonymous"))
    if not providers:
        raise ValueError(
            "authentication_enabled needs authentication_providers (token, tls or none)"
        )
    return AuthenticationService(providers)


def _token_key(config: AuthenticationConfig) -> VerificationKey:
    if config.token_secret_key and config.token_public_key:
        raise InvalidKey("give token_secret_key or token_public_key, not both")
    if config.token_secret_key:
        return secret_verification_key(_read(config.token_secret_key, "token_secret_key"))
    if config.token_public_key:
        if config.token_public_alg not in KEY_PAIR_ALGORITHMS:
            raise InvalidKey(
                f"token_public_alg {config.token_public_alg!r}: use one of {KEY_PAIR_ALGORITHMS}"
            )
        raw = _read(config.token_public_key, "token_public_key")
        return public_verification_key(raw, config.token_public_alg)
    raise InvalidKey("the token provider needs token_secret_key or token_public_key")


def _read(reference: str, setting: str) -> bytes:
    try:
        return read_key(reference)
    except InvalidKey as exc:
        raise InvalidKey(f"{setting}: {exc}") from exc
