"""Token authentication (Pulsar's ``AuthenticationProviderToken``, method ``token``).

The credential is a JWT (see :mod:`magnetar.authentication.jwt_tokens` for the format): its
signature must verify with the configured secret or public key, it must not be expired, and its
role claim (``sub`` unless ``token_auth_claim`` says otherwise) must be a non-empty string. The
token's ``exp`` becomes the principal's expiry, which the broker's refresh check watches.
A leading ``Bearer `` is ignored, so HTTP and binary credentials are read alike.
"""

from __future__ import annotations

from dataclasses import dataclass

from magnetar.authentication.errors import AuthenticationFailed
from magnetar.authentication.jwt_tokens import VerificationKey, verify_token
from magnetar.authentication.provider import Credentials, Principal

TOKEN_METHOD = "token"
_BEARER = "Bearer "


@dataclass(frozen=True)
class TokenAuthenticationProvider:
    key: VerificationKey
    role_claim: str = "sub"
    leeway_s: float = 0.0

    @property
    def method_name(self) -> str:
        return TOKEN_METHOD

    def authenticate(self, credentials: Credentials) -> Principal:
        data = credentials.command_data
        if not data:
            raise AuthenticationFailed("no token: the client sent no authentication data")
        try:
            token = data.decode("ascii").strip()
        except UnicodeDecodeError as exc:
            raise AuthenticationFailed("the token is malformed: not ASCII") from exc
        token = token.removeprefix(_BEARER).strip()
        claims = verify_token(token, self.key, leeway_s=self.leeway_s)
        role = claims.get(self.role_claim)
        if not isinstance(role, str) or not role:
            raise AuthenticationFailed(f"the token has no {self.role_claim!r} claim naming a role")
        exp = claims.get("exp")
        expires_at = float(exp) if isinstance(exp, (int, float)) else None
        return Principal(role, TOKEN_METHOD, expires_at)
