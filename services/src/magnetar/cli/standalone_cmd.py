"""``magnetar standalone``: broker + one bookie + RocksDB metadata in one process.

Flags override ``MAGNETAR_STANDALONE_*`` environment variables, which override defaults; the
result is the process's one :class:`~magnetar.standalone.StandaloneSettings`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from magnetar.cli.security_options import (
    AuthenticationEnabledOpt,
    AuthenticationProvidersOpt,
    AuthorizationEnabledOpt,
    ProxyRolesOpt,
    RefreshCheckOpt,
    SuperUserRolesOpt,
    TokenAuthClaimOpt,
    TokenPublicKeyOpt,
    TokenSecretKeyOpt,
    security_flags,
)
from magnetar.cli.server_process import (
    AdvertisedListenersOpt,
    ClusterNameOpt,
    TlsCertOpt,
    TlsKeyOpt,
    TlsPortOpt,
    TlsRequireClientCertOpt,
    TlsTrustOpt,
    WebTlsPortOpt,
    admin_app,
    run_server,
    tls_flags,
)


def standalone(
    data_dir: Annotated[Path | None, typer.Option(help="All state (default ./data).")] = None,
    broker_port: Annotated[int | None, typer.Option(help="Binary protocol port (6650).")] = None,
    web_port: Annotated[int | None, typer.Option(help="Admin REST port (8080).")] = None,
    advertised_address: Annotated[
        str | None, typer.Option(help="Host clients are told to dial (127.0.0.1).")
    ] = None,
    advertised_listeners: AdvertisedListenersOpt = None,
    bind_address: Annotated[str | None, typer.Option(help="Interface to listen on.")] = None,
    journal_sync: Annotated[
        bool | None,
        typer.Option("--journal-sync/--no-journal-sync", help="fdatasync each journal group."),
    ] = None,
    journal_dir: Annotated[
        Path | None,
        typer.Option(
            help="The journal's own dir, e.g. on a volume (default DATA_DIR/bookie/journal)."
        ),
    ] = None,
    ledger_dir: Annotated[
        Path | None,
        typer.Option(help="Entry logs and their index (default DATA_DIR/bookie/ledgers)."),
    ] = None,
    log_level: Annotated[str | None, typer.Option(help="debug, info, warning, error.")] = None,
    authentication_enabled: AuthenticationEnabledOpt = None,
    authentication_providers: AuthenticationProvidersOpt = None,
    authorization_enabled: AuthorizationEnabledOpt = None,
    super_user_roles: SuperUserRolesOpt = None,
    proxy_roles: ProxyRolesOpt = None,
    token_secret_key: TokenSecretKeyOpt = None,
    token_public_key: TokenPublicKeyOpt = None,
    token_auth_claim: TokenAuthClaimOpt = None,
    authentication_refresh_check_seconds: RefreshCheckOpt = None,
    cluster_name: ClusterNameOpt = None,
    broker_service_port_tls: TlsPortOpt = None,
    web_service_port_tls: WebTlsPortOpt = None,
    tls_certificate_file_path: TlsCertOpt = None,
    tls_key_file_path: TlsKeyOpt = None,
    tls_trust_certs_file_path: TlsTrustOpt = None,
    tls_require_trusted_client_cert_on_connect: TlsRequireClientCertOpt = None,
) -> None:
    """Run a broker with its own bookie and metadata store in one process."""
    from magnetar.geo import ClientRemoteClusters
    from magnetar.standalone import StandaloneSettings, serve_standalone
    from magnetar.telemetry.metrics import Metrics

    flags: dict[str, Any] = {
        "data_dir": data_dir,
        "broker_port": broker_port,
        "web_port": web_port,
        "advertised_address": advertised_address,
        "advertised_listeners": advertised_listeners,
        "bind_address": bind_address,
        "journal_sync": journal_sync,
        "journal_dir": journal_dir,
        "ledger_dir": ledger_dir,
        "log_level": log_level,
        "cluster_name": cluster_name,
        **tls_flags(
            broker_service_port_tls,
            web_service_port_tls,
            tls_certificate_file_path,
            tls_key_file_path,
            tls_trust_certs_file_path,
            tls_require_trusted_client_cert_on_connect,
        ),
    }
    flags.update(
        security_flags(
            authentication_enabled=authentication_enabled,
            authentication_providers=authentication_providers,
            authorization_enabled=authorization_enabled,
            super_user_roles=super_user_roles,
            proxy_roles=proxy_roles,
            token_secret_key=token_secret_key,
            token_public_key=token_public_key,
            token_auth_claim=token_auth_claim,
            authentication_refresh_check_seconds=authentication_refresh_check_seconds,
        )
    )
    metrics = Metrics()  # the broker's and the in-process bookie's
    run_server(
        StandaloneSettings,
        flags,
        lambda s: serve_standalone(s, admin_app(metrics, s), metrics, ClientRemoteClusters()),
    )
