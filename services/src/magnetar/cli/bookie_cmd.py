"""``magnetar bookie``: run one bookie process.

Flags override ``MAGNETAR_BOOKIE_*`` environment variables, which override defaults; the
result is the process's one :class:`~magnetar.bookie.settings.BookieSettings`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from magnetar.cli.security_options import (
    AuthenticationProvidersOpt,
    TokenPublicKeyOpt,
    TokenSecretKeyOpt,
)
from magnetar.cli.server_process import run_server


def bookie(
    data_dir: Annotated[Path | None, typer.Option(help="Journal, ledger storage, cookie.")] = None,
    port: Annotated[int | None, typer.Option(help="gRPC port (default 3181).")] = None,
    http_server_port: Annotated[
        int | None, typer.Option(help="HTTP port: /metrics and health (default 8000).")
    ] = None,
    metadata: Annotated[
        str | None,
        typer.Option(help="Metadata URL: etcd://host:port[,...], rocksdb:///path, memory://n."),
    ] = None,
    bookie_id: Annotated[str | None, typer.Option(help="Default: the advertised address.")] = None,
    advertised_address: Annotated[
        str | None, typer.Option(help="host:port clients dial (default 127.0.0.1:PORT).")
    ] = None,
    bind_address: Annotated[str | None, typer.Option(help="Interface to listen on.")] = None,
    rack: Annotated[
        str | None,
        typer.Option(help="Failure domain (rack, zone) ensembles spread over (default: none)."),
    ] = None,
    journal_sync: Annotated[
        bool | None,
        typer.Option("--journal-sync/--no-journal-sync", help="fdatasync each journal group."),
    ] = None,
    journal_dir: Annotated[
        Path | None,
        typer.Option(help="The journal's own dir, e.g. on a volume (default DATA_DIR/journal)."),
    ] = None,
    ledger_dir: Annotated[
        Path | None,
        typer.Option(help="Entry logs and their index (default DATA_DIR/ledgers)."),
    ] = None,
    read_only: Annotated[bool | None, typer.Option("--read-only", help="Refuse adds.")] = None,
    min_free_disk_fraction: Annotated[
        float | None, typer.Option(help="Go read-only when the free disk share drops below.")
    ] = None,
    session_timeout_s: Annotated[
        float | None, typer.Option(help="Metadata session timeout in seconds.")
    ] = None,
    log_level: Annotated[str | None, typer.Option(help="debug, info, warning, error.")] = None,
    tls_certificate_path: Annotated[
        str | None, typer.Option(help="PEM certificate: the gRPC port serves TLS only.")
    ] = None,
    tls_key_store: Annotated[
        str | None, typer.Option(help="PEM private key of that certificate.")
    ] = None,
    tls_trust_store: Annotated[
        str | None, typer.Option(help="PEM CA certificates of the clients' certificates.")
    ] = None,
    tls_client_authentication: Annotated[
        bool | None,
        typer.Option(
            "--tls-client-authentication/--no-tls-client-authentication",
            help="Refuse clients without a certificate the trust store vouches for.",
        ),
    ] = None,
    authentication_enabled: Annotated[
        bool | None,
        typer.Option(
            "--authentication-enabled/--no-authentication-enabled",
            help="Require every gRPC call to carry a token (or an mTLS certificate).",
            rich_help_panel="Security",
        ),
    ] = None,
    authentication_providers: AuthenticationProvidersOpt = None,
    token_secret_key: TokenSecretKeyOpt = None,
    token_public_key: TokenPublicKeyOpt = None,
    bookie_allowed_roles: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated roles that may call this bookie (default: any authenticated).",
            rich_help_panel="Security",
        ),
    ] = None,
) -> None:
    """Run one bookie (journal, ledger storage, gRPC service).

    Serves the Bookie gRPC service over an fsynced journal and RocksDB ledger storage, and
    registers in the metadata store. Prints a ready line once registered; SIGTERM stops it.
    With --authentication-enabled every gRPC call must carry a token (or a mutual-TLS
    certificate with the `tls` provider): brokers and autorecovery send theirs from
    bookkeeper_client_authentication_plugin/parameters.
    """
    from magnetar.bookie.server import serve
    from magnetar.cli.bookie_security import BookieServerSettings

    flags: dict[str, Any] = {
        "data_dir": data_dir,
        "port": port,
        "http_server_port": http_server_port,
        "metadata_url": metadata,
        "bookie_id": bookie_id,
        "advertised_address": advertised_address,
        "bind_address": bind_address,
        "rack": rack,
        "journal_sync": journal_sync,
        "journal_dir": journal_dir,
        "ledger_dir": ledger_dir,
        "read_only": read_only,
        "min_free_disk_fraction": min_free_disk_fraction,
        "session_timeout_s": session_timeout_s,
        "log_level": log_level,
        "tls_certificate_path": tls_certificate_path,
        "tls_key_store": tls_key_store,
        "tls_trust_store": tls_trust_store,
        "tls_client_authentication": tls_client_authentication,
        "authentication_enabled": authentication_enabled,
        "authentication_providers": authentication_providers,
        "token_secret_key": token_secret_key,
        "token_public_key": token_public_key,
        "bookie_allowed_roles": bookie_allowed_roles,
    }

    async def serve_guarded(settings: BookieServerSettings) -> int:
        return await serve(settings, settings.call_guard())

    run_server(BookieServerSettings, flags, serve_guarded)
