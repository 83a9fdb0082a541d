"""The security flags ``magnetar broker`` and ``magnetar standalone`` share (and the proxy's).

Each flag sets the broker.conf-named setting of the same name (``--super-user-roles`` ->
``super_user_roles``); like every flag it overrides the ``MAGNETAR_<ROLE>_*`` environment.
List settings take comma-separated values. The other security settings
(``token_public_alg``, ``anonymous_user_role``, ``token_allowed_clock_skew_seconds``,
``authenticate_metrics_endpoint``) are environment-only. Wiring only.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

_PANEL = "Security"

AuthenticationEnabledOpt = Annotated[
    bool | None,
    typer.Option(
        "--authentication-enabled/--no-authentication-enabled",
        help="Require clients to authenticate (binary protocol and admin API).",
        rich_help_panel=_PANEL,
    ),
]
AuthenticationProvidersOpt = Annotated[
    str | None,
    typer.Option(help="Comma-separated: token, tls, none.", rich_help_panel=_PANEL),
]
AuthorizationEnabledOpt = Annotated[
    bool | None,
    typer.Option(
        "--authorization-enabled/--no-authorization-enabled",
        help="Check roles' permissions (needs authentication).",
        rich_help_panel=_PANEL,
    ),
]
SuperUserRolesOpt = Annotated[
    str | None,
    typer.Option(help="Comma-separated roles that may do anything.", rich_help_panel=_PANEL),
]
ProxyRolesOpt = Annotated[
    str | None,
    typer.Option(help="Comma-separated roles of proxies (they forward a client's role).",
                 rich_help_panel=_PANEL),
]  # fmt: skip
TokenSecretKeyOpt = Annotated[
    str | None,
    typer.Option(
        help="HS256 key: file:///path, data:;base64,..., env:NAME.", rich_help_panel=_PANEL
    ),
]
TokenPublicKeyOpt = Annotated[
    str | None,
    typer.Option(
        help="RS256/ES256 public key: file:///path, data:;base64,...", rich_help_panel=_PANEL
    ),
]
TokenAuthClaimOpt = Annotated[
    str | None, typer.Option(help="The claim holding the role (sub).", rich_help_panel=_PANEL)
]
RefreshCheckOpt = Annotated[
    float | None,
    typer.Option(
        "--authentication-refresh-check-seconds",
        help="How often expired credentials are challenged (60).",
        rich_help_panel=_PANEL,
    ),
]


BrokerClientPluginOpt = Annotated[
    str | None,
    typer.Option(help="The proxy's credential towards brokers: token.", rich_help_panel=_PANEL),
]
BrokerClientParamsOpt = Annotated[
    str | None,
    typer.Option(
        help="token:<jwt> or file:///path holding the token (prefer the file).",
        rich_help_panel=_PANEL,
    ),
]


def security_flags(
    *,
    authentication_enabled: bool | None,
    authentication_providers: str | None,
    authorization_enabled: bool | None,
    super_user_roles: str | None,
    proxy_roles: str | None,
    token_secret_key: str | None,
    token_public_key: str | None,
    token_auth_claim: str | None,
    authentication_refresh_check_seconds: float | None,
) -> dict[str, Any]:
    """The flags as settings keyword arguments (None: not given)."""
    return dict(locals())
