"""``magnetar proxy``: the front door of a cluster, over its metadata store.

Flags override ``MAGNETAR_PROXY_*`` environment variables, which override defaults; the result
is the process's one :class:`~magnetar.proxy.settings.ProxySettings`.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from magnetar.cli.server_process import (
    TlsCertOpt,
    TlsKeyOpt,
    TlsRequireClientCertOpt,
    TlsTrustOpt,
    run_server,
)


def proxy(
    metadata: Annotated[
        str | None, typer.Option(help="Metadata URL of the cluster: etcd://host:port[,...].")
    ] = None,
    service_port: Annotated[
        int | None, typer.Option(help="Binary protocol port clients connect to (6650).")
    ] = None,
    web_service_port: Annotated[
        int | None, typer.Option(help="HTTP port: admin and lookup forwarding, /metrics (8080).")
    ] = None,
    advertised_address: Annotated[
        str | None, typer.Option(help="Host of the proxy's URLs in its ready line.")
    ] = None,
    bind_address: Annotated[str | None, typer.Option(help="Interface to listen on.")] = None,
    handshake_timeout: Annotated[
        float | None,
        typer.Option(help="Seconds a client (and a broker) may take to complete CONNECT (10)."),
    ] = None,
    operation_timeout: Annotated[
        float | None, typer.Option(help="Seconds a forwarded lookup may take (30).")
    ] = None,
    log_level: Annotated[str | None, typer.Option(help="debug, info, warning, error.")] = None,
    service_port_tls: Annotated[
        int | None, typer.Option(help="Binary protocol TLS port clients connect to (6651).")
    ] = None,
    web_service_port_tls: Annotated[
        int | None, typer.Option(help="HTTPS port: admin and lookup forwarding (8443).")
    ] = None,
    tls_certificate_file_path: TlsCertOpt = None,
    tls_key_file_path: TlsKeyOpt = None,
    tls_trust_certs_file_path: TlsTrustOpt = None,
    tls_require_trusted_client_cert_on_connect: TlsRequireClientCertOpt = None,
    tls_enabled_with_broker: Annotated[
        bool | None,
        typer.Option(
            "--tls-enabled-with-broker/--no-tls-enabled-with-broker",
            help="Connect to the brokers' TLS ports (pulsar+ssl://, https://).",
        ),
    ] = None,
    broker_client_trust_certs_file_path: Annotated[
        str | None, typer.Option(help="PEM CA certificates of the brokers' certificates.")
    ] = None,
    broker_client_certificate_file_path: Annotated[
        str | None, typer.Option(help="The proxy's PEM certificate for brokers that ask.")
    ] = None,
    broker_client_key_file_path: Annotated[
        str | None, typer.Option(help="The PEM key of that certificate.")
    ] = None,
) -> None:
    """Run a proxy: clients reach every broker of the cluster through it."""
    from magnetar.proxy import ProxySettings, serve_proxy

    flags: dict[str, Any] = {
        "metadata_url": metadata,
        "service_port": service_port,
        "web_service_port": web_service_port,
        "advertised_address": advertised_address,
        "bind_address": bind_address,
        "handshake_timeout_s": handshake_timeout,
        "operation_timeout_s": operation_timeout,
        "log_level": log_level,
        "service_port_tls": service_port_tls,
        "web_service_port_tls": web_service_port_tls,
        "tls_certificate_file_path": tls_certificate_file_path,
        "tls_key_file_path": tls_key_file_path,
        "tls_trust_certs_file_path": tls_trust_certs_file_path,
        "tls_require_trusted_client_cert_on_connect": tls_require_trusted_client_cert_on_connect,
        "tls_enabled_with_broker": tls_enabled_with_broker,
        "broker_client_trust_certs_file_path": broker_client_trust_certs_file_path,
        "broker_client_certificate_file_path": broker_client_certificate_file_path,
        "broker_client_key_file_path": broker_client_key_file_path,
    }
    run_server(ProxySettings, flags, serve_proxy)
