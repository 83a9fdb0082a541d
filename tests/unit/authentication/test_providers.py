"""The providers and the service that picks them: token, tls (on getpeercert() dicts), none."""

from __future__ import annotations

import base64
import time

import pytest

from magnetar.authentication import (
    AuthenticationConfig,
    AuthenticationFailed,
    CredentialExpired,
    Credentials,
    InvalidKey,
    Principal,
    build_authentication,
    role_of_certificate,
)
from magnetar.authentication.jwt_tokens import create_token, signing_key

SECRET = bytes(range(32))
SECRET_REF = "data:;base64," + base64.b64encode(SECRET).decode()

# What ssl.SSLSocket.getpeercert() returns for a verified client certificate.
CERT = {
    "subject": (
        (("countryName", "US"),),
        (("organizationName", "Acme"),),
        (("commonName", "app"),),
    ),
    "issuer": ((("commonName", "test-ca"),),),
    "version": 3,
    "serialNumber": "01",
    "notBefore": "Nov 24 00:00:00 2026 GMT",
    "notAfter": "Nov 24 00:00:00 2027 GMT",
}


def _token(role: str, **kw: int) -> bytes:
    return create_token(signing_key(SECRET, "HS256"), role, kw.get("exp")).encode()


def test_token_provider_reads_the_role_and_expiry() -> None:
    service = build_authentication(AuthenticationConfig(("token",), token_secret_key=SECRET_REF))
    exp = int(time.time()) + 60
    principal = service.authenticate("token", Credentials(_token("app", exp=exp)))
    assert principal == Principal("app", "token", float(exp))
    assert not principal.expired(time.time())
    assert principal.expired(exp)
    with pytest.raises(CredentialExpired):
        service.authenticate("token", Credentials(_token("app", exp=int(time.time()) - 1)))
    with pytest.raises(AuthenticationFailed, match="no token"):
        service.authenticate("token", Credentials())


def test_custom_role_claim() -> None:
    from magnetar.authentication.jwt_tokens import secret_verification_key
    from magnetar.authentication.token import TokenAuthenticationProvider

    provider = TokenAuthenticationProvider(secret_verification_key(SECRET), role_claim="role")
    with pytest.raises(AuthenticationFailed, match="'role' claim"):
        provider.authenticate(Credentials(_token("app")))


def test_unknown_or_missing_method_is_refused_with_the_methods_accepted() -> None:
    service = build_authentication(AuthenticationConfig(("token",), token_secret_key=SECRET_REF))
    with pytest.raises(AuthenticationFailed, match=r"'basic' is not enabled.*token"):
        service.authenticate("basic", Credentials(b"x"))
    with pytest.raises(AuthenticationFailed, match="authentication is required"):
        service.authenticate(None, Credentials())


def test_http_bearer_header() -> None:
    service = build_authentication(AuthenticationConfig(("token",), token_secret_key=SECRET_REF))
    header = "Bearer " + _token("ops").decode()
    assert service.authenticate_http(header).role == "ops"
    for bad in ["Basic abc", "Bearer", None]:
        with pytest.raises(AuthenticationFailed):
            service.authenticate_http(bad)


def test_tls_provider_takes_the_subjects_common_name() -> None:
    assert role_of_certificate(CERT) == "app"
    service = build_authentication(
        AuthenticationConfig(("org.apache.pulsar.broker.authentication.AuthenticationProviderTls",))
    )
    assert service.authenticate("tls", Credentials(peer_certificate=CERT)).role == "app"
    assert service.authenticate_http(None, CERT) == Principal("app", "tls")
    no_cn = {**CERT, "subject": ((("organizationName", "Acme"),),)}
    with pytest.raises(AuthenticationFailed, match="no common name"):
        service.authenticate("tls", Credentials(peer_certificate=no_cn))
    with pytest.raises(AuthenticationFailed, match="no client certificate"):
        service.authenticate("tls", Credentials())
    with pytest.raises(AuthenticationFailed, match="no client certificate"):
        service.authenticate("tls", Credentials(peer_certificate={}))


def test_none_provider_gives_the_anonymous_role() -> None:
    service = build_authentication(AuthenticationConfig(("none",), anonymous_user_role="guest"))
    assert service.authenticate(None, Credentials()).role == "guest"
    assert service.authenticate_http(None).role == "guest"


def test_configuration_errors_name_the_setting() -> None:
    with pytest.raises(InvalidKey, match="token_secret_key or token_public_key"):
        build_authentication(AuthenticationConfig(("token",)))
    with pytest.raises(InvalidKey, match="token_secret_key: cannot read key file"):
        build_authentication(
            AuthenticationConfig(("token",), token_secret_key="file:///nonexistent/key")
        )
    with pytest.raises(ValueError, match="unknown authentication provider 'kerberos'"):
        build_authentication(AuthenticationConfig(("kerberos",)))
    with pytest.raises(ValueError, match="needs authentication_providers"):
        build_authentication(AuthenticationConfig(()))
