"""JSON Web Tokens as Pulsar makes and reads them: the one adapter over PyJWT and cryptography.

Token format (that of Pulsar's ``AuthTokenUtils``, which ``pulsar tokens`` uses): the header is
``{"alg": ...}`` alone, the claims are ``sub`` (the role) and, when the token expires, ``exp``
in seconds since the epoch. Keys: an HMAC secret is raw bytes (32 for HS256, as ``pulsar tokens
create-secret-key`` writes them); an RSA or EC private key is PKCS#8 DER and its public key is
X.509 SubjectPublicKeyInfo DER, as ``pulsar tokens create-key-pair`` writes them. PEM keys are
accepted too on input. So a token made by either tool validates with the other's keys.

Verification names the algorithms it accepts (never ``none``: PyJWT refuses unsigned tokens
when algorithms are given); an HMAC key only verifies HMAC tokens and a public key only
tokens of its own algorithm family, which rules out the key-confusion forgery. Expiry is
checked against the wall clock with ``leeway_s`` of allowed skew.

Pure functions of their inputs (plus the clock and the OS's random source); safe from any task.
No other module imports ``jwt`` (an import contract says so).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from magnetar.authentication.errors import AuthenticationFailed, CredentialExpired, InvalidKey

HMAC_ALGORITHMS = ("HS256", "HS384", "HS512")
RSA_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512")
EC_ALGORITHMS = ("ES256", "ES384", "ES512")
KEY_PAIR_ALGORITHMS = RSA_ALGORITHMS + EC_ALGORITHMS
_HMAC_KEY_BYTES = {"HS256": 32, "HS384": 48, "HS512": 64}
_EC_CURVES: dict[str, ec.EllipticCurve] = {
    "ES256": ec.SECP256R1(),
    "ES384": ec.SECP384R1(),
    "ES512": ec.SECP521R1(),
}


@dataclass(frozen=True)
class SigningKey:
    """A key that signs tokens with ``algorithm`` (a secret, or a private key)."""

    key: Any
    algorithm: str


@dataclass(frozen=True)
class VerificationKey:
    """A key that verifies tokens signed with any of ``algorithms``."""

    key: Any
    algorithms: tuple[str, ...]


def create_secret_key(algorithm: str = "HS256") -> bytes:
    """Fresh random secret bytes for an HMAC algorithm (32 for HS256)."""
    import secrets

    size = _HMAC_KEY_BYTES.get(algorithm)
    if size is None:
        raise InvalidKey(f"{algorithm} is not an HMAC algorithm: use one of {HMAC_ALGORITHMS}")
    return secrets.token_bytes(size)


def create_key_pair(algorithm: str = "RS256") -> tuple[bytes, bytes]:
    """A fresh (private PKCS#8 DER, public X.509 DER) pair for ``algorithm``."""
    private: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey
    if algorithm in RSA_ALGORITHMS:
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    elif algorithm in _EC_CURVES:
        private = ec.generate_private_key(_EC_CURVES[algorithm])
    else:
        raise InvalidKey(f"{algorithm} is not a key-pair algorithm: use {KEY_PAIR_ALGORITHMS}")
    private_der = private.private_bytes(
        serialization.Encoding.DER,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    public_der = private.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return private_der, public_der


def signing_key(raw: bytes, algorithm: str) -> SigningKey:
    """``raw`` as a key that signs with ``algorithm``: a secret for HS*, else a private key."""
    if algorithm in HMAC_ALGORITHMS:
        return SigningKey(_secret(raw, algorithm), algorithm)
    if algorithm not in KEY_PAIR_ALGORITHMS:
        raise InvalidKey(f"unknown signature algorithm {algorithm}")
    try:
        if raw.lstrip().startswith(b"-----BEGIN"):
            key: Any = serialization.load_pem_private_key(raw, password=None)
        else:
            key = serialization.load_der_private_key(raw, password=None)
    except (ValueError, TypeError) as exc:
        raise InvalidKey(f"the private key is not a PKCS#8 DER or PEM key: {exc}") from exc
    _check_family(key, algorithm, "private")
    return SigningKey(key, algorithm)


def secret_verification_key(raw: bytes) -> VerificationKey:
    """An HMAC secret that verifies HS256, HS384 and HS512 tokens."""
    return VerificationKey(_secret(raw, "HS256"), HMAC_ALGORITHMS)


def public_verification_key(raw: bytes, algorithm: str = "RS256") -> VerificationKey:
    """A public key (X.509 DER or PEM) that verifies tokens of ``algorithm``'s family."""
    try:
        if raw.lstrip().startswith(b"-----BEGIN"):
            key: Any = serialization.load_pem_public_key(raw)
        else:
            key = serialization.load_der_public_key(raw)
    except (ValueError, TypeError) as exc:
        raise InvalidKey(f"the public key is not an X.509 DER or PEM key: {exc}") from exc
    _check_family(key, algorithm, "public")
    family = RSA_ALGORITHMS if algorithm in RSA_ALGORITHMS else EC_ALGORITHMS
    return VerificationKey(key, family)


def _secret(raw: bytes, algorithm: str) -> bytes:
    if len(raw) < 32:
        raise InvalidKey(
            f"an {algorithm} secret key needs at least 32 bytes, this one has {len(raw)}"
        )
    return raw


def _check_family(key: Any, algorithm: str, kind: str) -> None:
    is_rsa = isinstance(key, (rsa.RSAPrivateKey, rsa.RSAPublicKey))
    is_ec = isinstance(key, (ec.EllipticCurvePrivateKey, ec.EllipticCurvePublicKey))
    if algorithm in RSA_ALGORITHMS and not is_rsa:
        raise InvalidKey(f"{algorithm} needs an RSA {kind} key")
    if algorithm in EC_ALGORITHMS and not is_ec:
        raise InvalidKey(f"{algorithm} needs an EC {kind} key")
    if algorithm not in KEY_PAIR_ALGORITHMS:
        raise InvalidKey(f"unknown key-pair algorithm {algorithm}: use {KEY_PAIR_ALGORITHMS}")


def create_token(key: SigningKey, subject: str, expires_at: int | None = None) -> str:
    """A signed token for role ``subject`` (``exp`` = ``expires_at`` epoch seconds, if set)."""
    claims: dict[str, Any] = {"sub": subject}
    if expires_at is not None:
        claims["exp"] = expires_at
    return jwt.encode(claims, key.key, algorithm=key.algorithm, headers={"typ": None})


def verify_token(token: str, key: VerificationKey, *, leeway_s: float = 0) -> dict[str, Any]:
    """The claims of ``token`` once its signature and expiry check out.

    Raises :class:`CredentialExpired` past ``exp``, :class:`AuthenticationFailed` otherwise."""
    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            key.key,
            algorithms=list(key.algorithms),
            leeway=leeway_s,
            options={"require": [], "verify_aud": False},
        )
    except jwt.ExpiredSignatureError as exc:
        raise CredentialExpired("the token has expired") from exc
    except jwt.InvalidAlgorithmError as exc:
        raise AuthenticationFailed(f"the token's algorithm is not accepted: {exc}") from exc
    except jwt.InvalidSignatureError as exc:
        raise AuthenticationFailed("the token's signature does not verify") from exc
    except jwt.DecodeError as exc:
        raise AuthenticationFailed(f"the token is malformed: {exc}") from exc
    except jwt.InvalidTokenError as exc:
        raise AuthenticationFailed(f"the token is not valid: {exc}") from exc
    return claims


def token_parts(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The header and the claims of ``token``, NOT verified (for ``magnetar tokens show``)."""
    try:
        header = jwt.get_unverified_header(token)
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.InvalidTokenError as exc:
        raise AuthenticationFailed(f"the token is malformed: {exc}") from exc
    return dict(header), dict(claims)
