"""A connection's authentication state: CONNECT, proxies, the refresh decision, AUTH_RESPONSE."""

from __future__ import annotations

import time

import pytest

from magnetar.authentication import (
    AuthenticationConfig,
    AuthenticationFailed,
    Principal,
    build_authentication,
)
from magnetar.authentication.jwt_tokens import create_token, signing_key
from magnetar.authorization import AuthorizationRules, Caller
from magnetar.broker.connection_auth import ConnectionAuth, RefreshAction, refresh_action
from magnetar.wire import pulsar_api_pb2 as pb

SECRET = bytes(range(32))
SERVICE = build_authentication(
    AuthenticationConfig(
        ("token",), token_secret_key="data:;base64,AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
    )
)
RULES = AuthorizationRules(frozenset({"admin"}), frozenset({"proxy"}))


def token(role: str, exp: float | None = None) -> bytes:
    return create_token(
        signing_key(SECRET, "HS256"), role, None if exp is None else int(exp)
    ).encode()


def connect(data: bytes, original: str | None = None) -> pb.CommandConnect:
    cmd = pb.CommandConnect(client_version="t", auth_method_name="token", auth_data=data)
    if original is not None:
        cmd.original_principal = original
    return cmd


def test_refresh_decision() -> None:
    valid = Principal("a", "token", expires_at=100.0)
    forever = Principal("a", "token")
    assert (
        refresh_action(valid, 99, supports_refresh=True, challenge_pending=False)
        is RefreshAction.NONE
    )
    assert (
        refresh_action(forever, 1e12, supports_refresh=False, challenge_pending=True)
        is RefreshAction.NONE
    )
    assert (
        refresh_action(valid, 100, supports_refresh=True, challenge_pending=False)
        is RefreshAction.CHALLENGE
    )
    assert (
        refresh_action(valid, 100, supports_refresh=False, challenge_pending=False)
        is RefreshAction.CLOSE
    )
    assert (
        refresh_action(valid, 100, supports_refresh=True, challenge_pending=True)
        is RefreshAction.CLOSE
    )


def test_challenge_once_then_refresh_or_close() -> None:
    now = time.time()
    auth = ConnectionAuth(SERVICE, RULES)
    assert auth.connect(connect(token("app", now + 60)), None) == Caller("app")
    assert auth.refresh_step(now, supports_refresh=True) is RefreshAction.NONE
    assert auth.refresh_step(now + 61, supports_refresh=True) is RefreshAction.CHALLENGE
    assert auth.refresh_step(now + 62, supports_refresh=True) is RefreshAction.CLOSE
    response = pb.CommandAuthResponse()
    response.response.auth_method_name = "token"
    response.response.auth_data = token("app", now + 120)
    assert auth.auth_response(response, None).role == "app"
    assert auth.refresh_step(now + 62, supports_refresh=True) is RefreshAction.NONE


def test_refresh_must_keep_the_role() -> None:
    auth = ConnectionAuth(SERVICE, RULES)
    auth.connect(connect(token("app")), None)
    response = pb.CommandAuthResponse()
    response.response.auth_data = token("admin")
    with pytest.raises(AuthenticationFailed, match="not 'app'"):
        auth.auth_response(response, None)


def test_only_proxy_roles_forward_an_original_principal() -> None:
    assert ConnectionAuth(SERVICE, RULES).connect(connect(token("proxy"), "app"), None) == Caller(
        "proxy", "app"
    )
    for role, original in [("proxy", "proxy"), ("app", "admin")]:
        with pytest.raises(AuthenticationFailed, match="invalid roles"):
            ConnectionAuth(SERVICE, RULES).connect(connect(token(role), original), None)
