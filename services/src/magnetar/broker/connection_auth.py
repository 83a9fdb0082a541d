"""One binary connection's authentication: CONNECT, the refresh of expiring credentials through
AUTH_CHALLENGE / AUTH_RESPONSE, and who the connection acts for (Pulsar's ServerCnx auth state).

CONNECT's ``auth_method_name`` + ``auth_data`` (and, over TLS, the peer certificate) pick a
provider and prove a role; a proxy role must also forward the client's ``original_principal``
(:meth:`~magnetar.authorization.AuthorizationRules.proxy_problem`). Failure is
:class:`~magnetar.authentication.AuthenticationFailed`: the connection answers
``ERROR(AuthenticationError)`` and closes, as Pulsar's broker does.

Refresh, as Pulsar's ``refreshAuthenticationCredentials``: every ``refresh_check_s`` the
connection asks :meth:`ConnectionAuth.refresh_step`. A credential that has expired gets one
AUTH_CHALLENGE (``PulsarAuthRefresh``); a client that cannot refresh (no
``supports_auth_refresh``), or that has not answered by the next check, is closed. An
AUTH_RESPONSE is authenticated like a CONNECT and must prove the same role.

:func:`refresh_action` is the pure decision; :class:`ConnectionAuth` holds the state. Used by
:class:`~magnetar.broker.connection.ServerCnx` only, on the broker's loop.
"""

from __future__ import annotations

import enum

from magnetar.authentication import (
    AuthenticationFailed,
    AuthenticationService,
    Credentials,
    PeerCertificate,
    Principal,
)
from magnetar.authorization import AuthorizationRules, Caller
from magnetar.wire import pulsar_api_pb2 as pb

REFRESH_AUTH_DATA = b"PulsarAuthRefresh"  # Pulsar's AuthData.REFRESH_AUTH_DATA


class RefreshAction(enum.Enum):
    NONE = "none"
    CHALLENGE = "challenge"
    CLOSE = "close"


def refresh_action(
    principal: Principal | None, now: float, *, supports_refresh: bool, challenge_pending: bool
) -> RefreshAction:
    """What a refresh check does: nothing while the credential is valid; else challenge once,
    and close a client that cannot refresh or did not answer the previous challenge."""
    if principal is None or not principal.expired(now):
        return RefreshAction.NONE
    if not supports_refresh or challenge_pending:
        return RefreshAction.CLOSE
    return RefreshAction.CHALLENGE


class ConnectionAuth:
    def __init__(self, service: AuthenticationService, rules: AuthorizationRules) -> None:
        self._service = service
        self._rules = rules
        self.principal: Principal | None = None
        self.caller: Caller | None = None
        self.challenge_pending = False

    def connect(
        self, connect: pb.CommandConnect, peer_certificate: PeerCertificate | None
    ) -> Caller:
        """Authenticate CONNECT; the caller it makes, or AuthenticationFailed."""
        principal = self._service.authenticate_connect(connect, peer_certificate)
        original = connect.original_principal if connect.HasField("original_principal") else None
        problem = self._rules.proxy_problem(principal.role, original or None)
        if problem is not None:
            raise AuthenticationFailed(f"invalid roles: {problem}")
        self.principal = principal
        self.caller = Caller(principal.role, original or None)
        return self.caller

    def refresh_step(self, now: float, *, supports_refresh: bool) -> RefreshAction:
        action = refresh_action(
            self.principal,
            now,
            supports_refresh=supports_refresh,
            challenge_pending=self.challenge_pending,
        )
        if action is RefreshAction.CHALLENGE:
            self.challenge_pending = True
        return action

    def challenge_method(self) -> str:
        return self.principal.method if self.principal is not None else ""

    def auth_response(
        self, response: pb.CommandAuthResponse, peer_certificate: PeerCertificate | None
    ) -> Principal:
        """Authenticate a refreshed credential; it must prove the same role."""
        data = response.response
        method = data.auth_method_name if data.HasField("auth_method_name") else None
        principal = self._service.authenticate(
            method or self.challenge_method(),
            Credentials(data.auth_data if data.HasField("auth_data") else None, peer_certificate),
        )
        if self.principal is not None and principal.role != self.principal.role:
            raise AuthenticationFailed(
                f"the refreshed credential is for role {principal.role!r}, "
                f"not {self.principal.role!r}"
            )
        self.principal = principal
        self.challenge_pending = False
        return principal
