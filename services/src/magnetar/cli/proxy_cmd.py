"""``magnetar proxy``: the front door of a cluster, over its metadata store.

Flags override ``MAGNETAR_PROXY_*`` environment variables, which override defaults; the result
is the process's one :class:`~magnetar.proxy.settings.ProxySettings`.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from magnetar.cli.security_options import (
    AuthenticationEnabledOpt,
    AuthenticationProvidersOpt,
    BrokerClientParamsOpt,
    BrokerClientPluginOpt,
    TokenPublicKeyOpt,
    TokenSecretKeyOpt,
)
from magnetar.cli.server_process import run_server


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
    authentication_enabled: AuthenticationEnabledOpt = None,
    authentication_providers: AuthenticationProvidersOpt = None,
    token_secret_key: TokenSecretKeyOpt = None,
    token_public_key: TokenPublicKeyOpt = None,
    broker_client_authentication_plugin: BrokerClientPluginOpt = None,
    broker_client_authentication_parameters: BrokerClientParamsOpt = None,
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
        "authentication_enabled": authentication_enabled,
        "authentication_providers": authentication_providers,
        "token_secret_key": token_secret_key,
        "token_public_key": token_public_key,
        "broker_client_authentication_plugin": broker_client_authentication_plugin,
        "broker_client_authentication_parameters": broker_client_authentication_parameters,
    }
    run_server(ProxySettings, flags, serve_proxy)
