"""The bookie's call guard: bearer tokens out of call metadata, and the allowed roles."""

from __future__ import annotations

import pytest

from magnetar.bookie.call_auth import (
    CallCredentials,
    CallGuard,
    CallRefused,
    RoleNotAllowed,
    bearer_token,
)


def test_bearer_token_found_in_any_case() -> None:
    assert bearer_token([("x-other", "1"), ("Authorization", "bearer abc.def")]) == "abc.def"
    assert bearer_token([("authorization", b"Bearer  t ")]) == "t"
    assert bearer_token([("x-other", "1")]) is None


@pytest.mark.parametrize("value", ["Basic dXNlcg==", "Bearer", "Bearer   ", "token"])
def test_malformed_authorization_refused(value: str) -> None:
    with pytest.raises(CallRefused, match="'Bearer <token>'"):
        bearer_token([("authorization", value)])


def _by_token(credentials: CallCredentials) -> str:
    if credentials.token is None:
        raise CallRefused("authentication is required")
    return credentials.token.removeprefix("role-")


def test_any_authenticated_role_by_default() -> None:
    assert CallGuard(_by_token).check(CallCredentials(token="role-anyone")) == "anyone"
    with pytest.raises(CallRefused, match="required"):
        CallGuard(_by_token).check(CallCredentials())


def test_allowed_roles_refuse_others_by_name() -> None:
    guard = CallGuard(_by_token, frozenset({"broker"}))
    assert guard.check(CallCredentials(token="role-broker")) == "broker"
    with pytest.raises(RoleNotAllowed, match="'app' may not call this bookie"):
        guard.check(CallCredentials(token="role-app"))


def test_credentials_repr_hides_the_token() -> None:
    assert "secret-jwt" not in repr(CallCredentials(token="secret-jwt", peer_common_name="b"))
