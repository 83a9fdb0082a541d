"""Who may call the bookie: the pure check every gRPC call and stream passes first.

With ``authentication_enabled`` the bookie's servicer asks a :class:`CallGuard` before it runs a
call. The caller presents a bearer token (call metadata ``authorization: Bearer <token>``, as
:mod:`magnetar.ledger.bookie_client` sends it) or, over mutual TLS, its certificate's common
name. The guard hands that to its ``authenticate`` function (the process's authentication
providers, wired in by the composition above: the bookie layer does not know them), then checks
the role against ``allowed_roles`` (empty: any authenticated role). A refusal raises
:class:`CallRefused` with a reason that names what is wrong and never the token itself.

Pure and synchronous; safe from any task.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from magnetar.bookie.errors import BookieError

AUTHORIZATION_KEY = "authorization"


class CallRefused(BookieError):
    """The caller of a bookie call is not authenticated, or its role may not call the bookie."""


class RoleNotAllowed(CallRefused):
    """The caller is authenticated, but its role is not among ``bookie_allowed_roles``."""


@dataclass(frozen=True)
class CallCredentials:
    """What a caller presented: a bearer token and, over mutual TLS, its certificate's CN."""

    token: str | None = None
    peer_common_name: str | None = None

    def __repr__(self) -> str:
        token = "<redacted>" if self.token else None
        return f"CallCredentials(token={token}, peer_common_name={self.peer_common_name!r})"


Authenticate = Callable[[CallCredentials], str]
"""The role ``credentials`` prove; raises :class:`CallRefused` with the reason otherwise."""


def bearer_token(metadata: Iterable[tuple[str, str | bytes]]) -> str | None:
    """The token of an ``authorization: Bearer`` metadata entry (None when there is none);
    CallRefused when the entry is not ``Bearer <token>``."""
    for key, value in metadata:
        if key.lower() != AUTHORIZATION_KEY:
            continue
        text = value.decode(errors="replace") if isinstance(value, bytes) else value
        scheme, _, token = text.strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise CallRefused("the authorization metadata must be 'Bearer <token>'")
        return token.strip()
    return None


@dataclass(frozen=True)
class CallGuard:
    """The bookie's authentication check: ``authenticate`` then the allowed roles."""

    authenticate: Authenticate
    allowed_roles: frozenset[str] = frozenset()

    def check(self, credentials: CallCredentials) -> str:
        """The caller's role; CallRefused (with a reason for the caller) otherwise."""
        role = self.authenticate(credentials)
        if self.allowed_roles and role not in self.allowed_roles:
            raise RoleNotAllowed(
                f"role {role!r} may not call this bookie (bookie_allowed_roles: "
                f"{', '.join(sorted(self.allowed_roles))})"
            )
        return role
