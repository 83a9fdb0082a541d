"""Tokens and key references: Pulsar's format, every algorithm family, and forgeries refused."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path

import pytest

from magnetar.authentication import AuthenticationFailed, CredentialExpired, InvalidKey
from magnetar.authentication.jwt_tokens import (
    create_key_pair,
    create_secret_key,
    create_token,
    public_verification_key,
    secret_verification_key,
    signing_key,
    token_parts,
    verify_token,
)
from magnetar.authentication.keys import read_key

# A token `pulsar tokens create --secret-key` made (Pulsar's docs example shape): header
# {"alg":"HS256"} alone, claims {"sub": ...}. Rebuilt here with a known key.
SECRET = bytes(range(32))


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def test_hs256_token_has_pulsars_header_and_claims() -> None:
    token = create_token(signing_key(SECRET, "HS256"), "app", expires_at=2_000_000_000)
    header, claims = token_parts(token)
    assert header == {"alg": "HS256"}
    assert claims == {"sub": "app", "exp": 2_000_000_000}
    assert token.split(".")[0] == _b64url(b'{"alg":"HS256"}')  # byte-identical to jjwt's
    assert verify_token(token, secret_verification_key(SECRET))["sub"] == "app"


@pytest.mark.parametrize("algorithm", ["RS256", "ES256", "ES384"])
def test_key_pair_tokens_verify_with_the_public_key_only(algorithm: str) -> None:
    private, public = create_key_pair(algorithm)
    token = create_token(signing_key(private, algorithm), "svc")
    assert verify_token(token, public_verification_key(public, algorithm))["sub"] == "svc"
    _, other_public = create_key_pair(algorithm)
    with pytest.raises(AuthenticationFailed, match="signature"):
        verify_token(token, public_verification_key(other_public, algorithm))


def test_expired_token_is_refused_as_expired() -> None:
    token = create_token(signing_key(SECRET, "HS256"), "app", expires_at=int(time.time()) - 5)
    with pytest.raises(CredentialExpired):
        verify_token(token, secret_verification_key(SECRET))
    assert verify_token(token, secret_verification_key(SECRET), leeway_s=60)["sub"] == "app"


def test_forgeries_are_refused() -> None:
    key = secret_verification_key(SECRET)
    good = create_token(signing_key(SECRET, "HS256"), "app")
    header, _, signature = good.split(".")
    tampered = f"{header}.{_b64url(json.dumps({'sub': 'admin'}).encode())}.{signature}"
    unsigned = _b64url(b'{"alg":"none"}') + "." + _b64url(b'{"sub":"admin"}') + "."
    wrong_key = create_token(signing_key(bytes(32), "HS256"), "app")
    for token, match in [
        (tampered, "signature"),
        (unsigned, "algorithm"),
        (wrong_key, "signature"),
        ("not-a-token", "malformed"),
    ]:
        with pytest.raises(AuthenticationFailed, match=match):
            verify_token(token, key)


def test_public_key_does_not_verify_an_hmac_token_made_with_it() -> None:
    # Key confusion: an attacker signs HS256 with the (public) RSA key bytes.
    _, public = create_key_pair("RS256")
    forged = create_token(signing_key(public + bytes(32), "HS256"), "admin")
    with pytest.raises(AuthenticationFailed):
        verify_token(forged, public_verification_key(public, "RS256"))


def test_key_sizes_and_families_are_checked() -> None:
    assert len(create_secret_key()) == 32
    with pytest.raises(InvalidKey, match="32 bytes"):
        signing_key(b"short", "HS256")
    private, _ = create_key_pair("ES256")
    with pytest.raises(InvalidKey, match="RSA"):
        signing_key(private, "RS256")
    with pytest.raises(InvalidKey, match="not an HMAC"):
        create_secret_key("RS256")


def test_key_references(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key_file = tmp_path / "secret.key"
    key_file.write_bytes(SECRET)
    encoded = base64.b64encode(SECRET).decode()
    monkeypatch.setenv("MY_KEY", encoded)
    assert read_key(f"file://{key_file}") == SECRET
    assert read_key(f"data:;base64,{encoded}") == SECRET
    assert read_key("env:MY_KEY") == SECRET
    assert read_key(encoded) == SECRET
    assert read_key("data:,plain") == b"plain"
    with pytest.raises(InvalidKey, match="cannot read key file"):
        read_key(f"file://{tmp_path}/missing.key")
    with pytest.raises(InvalidKey, match="not base64"):
        read_key("file-but-no-scheme!")
    with pytest.raises(InvalidKey, match="not set"):
        read_key("env:NOT_SET_ANYWHERE_123")
