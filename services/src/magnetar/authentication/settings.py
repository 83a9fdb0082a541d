"""The authentication settings a server process shares (a pydantic-settings mixin), as the TLS
mixins of :mod:`magnetar.tls.settings` are shared.

The broker (and standalone) and the proxy inherit :class:`AuthenticationSettings`, so a setting
has one name under each process's env prefix (``MAGNETAR_BROKER_TOKEN_SECRET_KEY``,
``MAGNETAR_PROXY_TOKEN_SECRET_KEY``). Names are broker.conf / proxy.conf ones in snake case.
Providers: ``token``, ``tls``, ``none`` (or Pulsar's provider class names); keys are
references: ``file:///path``, ``data:;base64,...``, ``env:NAME``. A list is comma-separated
(``token,tls``), from the command line and the environment alike, never JSON.
"""

from __future__ import annotations

from typing import Annotated, Self

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode

from magnetar.authentication.client_token import client_token
from magnetar.authentication.errors import InvalidKey
from magnetar.authentication.service import AuthenticationConfig, build_authentication

CommaList = Annotated[tuple[str, ...], NoDecode]


def split_commas(value: object) -> object:
    """A list setting given as a .conf file gives it: ``"admin,ops"`` -> ``("admin", "ops")``."""
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return value


class AuthenticationSettings(BaseSettings):
    """Who a client is: the providers and the keys tokens are checked with."""

    authentication_enabled: bool = False
    authentication_providers: CommaList = ()
    anonymous_user_role: str = ""
    token_secret_key: SecretStr = SecretStr("")
    token_public_key: SecretStr = SecretStr("")
    token_public_alg: str = "RS256"
    token_auth_claim: str = "sub"
    token_allowed_clock_skew_seconds: float = Field(default=0.0, ge=0)

    @field_validator("authentication_providers", mode="before")
    @classmethod
    def _providers_list(cls, value: object) -> object:
        return split_commas(value)

    @model_validator(mode="after")
    def _authentication_loads(self) -> Self:
        """With authentication on, a bad provider or key stops the start with a message naming
        the setting (the keys are read here once, at start)."""
        if self.authentication_enabled:
            try:
                build_authentication(self.authentication_config())
            except InvalidKey as exc:
                raise ValueError(str(exc)) from exc
        return self

    def authentication_config(self) -> AuthenticationConfig:
        return AuthenticationConfig(
            providers=self.authentication_providers,
            token_secret_key=self.token_secret_key.get_secret_value(),
            token_public_key=self.token_public_key.get_secret_value(),
            token_public_alg=self.token_public_alg,
            token_auth_claim=self.token_auth_claim,
            token_allowed_clock_skew_s=self.token_allowed_clock_skew_seconds,
            anonymous_user_role=self.anonymous_user_role,
        )


class BookkeeperClientAuthenticationSettings(BaseSettings):
    """The credential a bookie client (broker, autorecovery) presents to authenticating
    bookies: broker.conf's ``bookkeeperClientAuthenticationPlugin`` and
    ``bookkeeperClientAuthenticationParameters`` (``token``; ``token:<jwt>`` or
    ``file:///path``). Checked when the settings are built, so a bad value stops the start."""

    bookkeeper_client_authentication_plugin: str = ""
    bookkeeper_client_authentication_parameters: SecretStr = SecretStr("")

    @model_validator(mode="after")
    def _bookkeeper_token_loads(self) -> Self:
        self.bookkeeper_client_token()
        return self

    def bookkeeper_client_token(self) -> str:
        """The token to send the bookies ("" when none is configured)."""
        return (
            client_token(
                self.bookkeeper_client_authentication_plugin,
                self.bookkeeper_client_authentication_parameters.get_secret_value(),
                "bookkeeper_client_authentication",
            )
            or ""
        )
