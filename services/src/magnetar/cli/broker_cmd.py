"""``magnetar broker``: a broker over an external metadata store and bookies.

Flags override ``MAGNETAR_BROKER_*`` environment variables, which override defaults; the
result is the process's one :class:`~magnetar.broker.settings.BrokerSettings`.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import typer

from magnetar.cli.main import app


@app.command()
def broker(
    metadata: Annotated[
        str | None, typer.Option(help="Metadata URL: etcd://host:port[,...], rocksdb:///path.")
    ] = None,
    broker_port: Annotated[int | None, typer.Option(help="Binary protocol port (6650).")] = None,
    web_port: Annotated[int | None, typer.Option(help="Admin REST port (8080).")] = None,
    advertised_address: Annotated[
        str | None, typer.Option(help="Host clients are told to dial.")
    ] = None,
    bind_address: Annotated[str | None, typer.Option(help="Interface to listen on.")] = None,
    log_level: Annotated[str | None, typer.Option(help="debug, info, warning, error.")] = None,
) -> None:
    """Run a broker against an external metadata store and bookies."""
    from magnetar.broker.settings import BrokerSettings
    from magnetar.broker.standalone import serve_broker
    from magnetar.cli.standalone_cmd import admin_app
    from magnetar.telemetry import configure_logging

    given: dict[str, Any] = {
        "metadata_url": metadata,
        "broker_port": broker_port,
        "web_port": web_port,
        "advertised_address": advertised_address,
        "bind_address": bind_address,
        "log_level": log_level,
    }
    settings = BrokerSettings(**{k: v for k, v in given.items() if v is not None})
    configure_logging(settings.log_level, json=settings.log_json)
    code = asyncio.run(serve_broker(settings, admin_app))
    raise typer.Exit(code)
