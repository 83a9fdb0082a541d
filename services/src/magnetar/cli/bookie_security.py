"""The bookie process's authentication, composed above the bookie layer.

The bookie (:mod:`magnetar.bookie`) sits below :mod:`magnetar.authentication` and cannot use
its providers, so ``magnetar bookie`` builds its settings as :class:`BookieServerSettings` (the
bookie's own plus :class:`~magnetar.authentication.settings.AuthenticationSettings`, under the
same ``MAGNETAR_BOOKIE_`` prefix) and hands the bookie a
:class:`~magnetar.bookie.call_auth.CallGuard` over the configured providers: a bearer token
goes to ``token``; else a mutual-TLS certificate's CN to ``tls``; else ``none``.
"""

from __future__ import annotations

from pydantic import field_validator
from pydantic_settings import SettingsConfigDict

from magnetar.authentication import AuthenticationFailed, build_authentication
from magnetar.authentication.provider import Credentials
from magnetar.authentication.service import NONE_METHOD, AuthenticationService
from magnetar.authentication.settings import AuthenticationSettings, CommaList, split_commas
from magnetar.authentication.tls import TLS_METHOD
from magnetar.authentication.token import TOKEN_METHOD
from magnetar.bookie.call_auth import Authenticate, CallCredentials, CallGuard, CallRefused
from magnetar.bookie.settings import BookieSettings


class BookieServerSettings(BookieSettings, AuthenticationSettings):
    """``magnetar bookie``'s settings: the bookie's and who may call it."""

    model_config = SettingsConfigDict(env_prefix="MAGNETAR_BOOKIE_", frozen=True)

    # The roles that may call the bookie (comma-separated); empty: any authenticated role.
    bookie_allowed_roles: CommaList = ()

    @field_validator("bookie_allowed_roles", mode="before")
    @classmethod
    def _roles_list(cls, value: object) -> object:
        return split_commas(value)

    def call_guard(self) -> CallGuard | None:
        """The guard of every gRPC call (None: authentication is off). Reads the keys."""
        if not self.authentication_enabled:
            return None
        service = build_authentication(self.authentication_config())
        return CallGuard(_authenticator(service), frozenset(self.bookie_allowed_roles))


def _authenticator(service: AuthenticationService) -> Authenticate:
    methods = service.methods

    def authenticate(credentials: CallCredentials) -> str:
        try:
            if credentials.token is not None:
                if TOKEN_METHOD not in methods:
                    raise CallRefused("token authentication is not enabled on this bookie")
                principal = service.authenticate(
                    TOKEN_METHOD, Credentials(credentials.token.encode())
                )
            elif credentials.peer_common_name and TLS_METHOD in methods:
                certificate = {"subject": ((("commonName", credentials.peer_common_name),),)}
                principal = service.authenticate(
                    TLS_METHOD, Credentials(peer_certificate=certificate)
                )
            elif NONE_METHOD in methods:
                principal = service.authenticate(NONE_METHOD, Credentials())
            else:
                raise CallRefused(
                    "authentication is required: send 'authorization: Bearer <token>' "
                    "(bookkeeper_client_authentication_plugin/parameters on the client)"
                )
        except AuthenticationFailed as exc:
            raise CallRefused(str(exc)) from exc
        return principal.role

    return authenticate
