"""``magnetar broker``: a broker over an external metadata store and bookies.

Flags override ``MAGNETAR_BROKER_*`` environment variables, which override defaults; the
result is the process's one :class:`~magnetar.broker.settings.BrokerSettings`.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from magnetar.cli.server_process import (
    AdvertisedListenersOpt,
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


def broker(
    metadata: Annotated[
        str | None, typer.Option(help="Metadata URL: etcd://host:port[,...], rocksdb:///path.")
    ] = None,
    broker_port: Annotated[int | None, typer.Option(help="Binary protocol port (6650).")] = None,
    web_port: Annotated[int | None, typer.Option(help="Admin REST port (8080).")] = None,
    advertised_address: Annotated[
        str | None, typer.Option(help="Host clients are told to dial.")
    ] = None,
    advertised_listeners: AdvertisedListenersOpt = None,
    bind_address: Annotated[str | None, typer.Option(help="Interface to listen on.")] = None,
    log_level: Annotated[str | None, typer.Option(help="debug, info, warning, error.")] = None,
    broker_service_port_tls: TlsPortOpt = None,
    web_service_port_tls: WebTlsPortOpt = None,
    tls_certificate_file_path: TlsCertOpt = None,
    tls_key_file_path: TlsKeyOpt = None,
    tls_trust_certs_file_path: TlsTrustOpt = None,
    tls_require_trusted_client_cert_on_connect: TlsRequireClientCertOpt = None,
) -> None:
    """Run a broker against an external metadata store and bookies."""
    from magnetar.broker.process import serve_broker
    from magnetar.broker.settings import BrokerSettings
    from magnetar.telemetry.metrics import Metrics

    flags: dict[str, Any] = {
        "metadata_url": metadata,
        "broker_port": broker_port,
        "web_port": web_port,
        "advertised_address": advertised_address,
        "advertised_listeners": advertised_listeners,
        "bind_address": bind_address,
        "log_level": log_level,
        **tls_flags(
            broker_service_port_tls,
            web_service_port_tls,
            tls_certificate_file_path,
            tls_key_file_path,
            tls_trust_certs_file_path,
            tls_require_trusted_client_cert_on_connect,
        ),
    }
    run_server(BrokerSettings, flags, lambda s: serve_broker(s, admin_app(Metrics())))
