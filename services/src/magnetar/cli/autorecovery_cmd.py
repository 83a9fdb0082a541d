"""``magnetar autorecovery``: run the auditor and a replication worker.

Flags override ``MAGNETAR_AUTORECOVERY_*`` environment variables, which override defaults; the
result is the process's one
:class:`~magnetar.autorecovery.settings.AutorecoverySettings`.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from magnetar.cli.server_process import run_server


def autorecovery(
    metadata: Annotated[
        str | None, typer.Option(help="Metadata URL: etcd://host:port[,...], rocksdb:///path.")
    ] = None,
    http_server_port: Annotated[
        int | None, typer.Option(help="HTTP port: /metrics and health (default 8000).")
    ] = None,
    bind_address: Annotated[str | None, typer.Option(help="Interface to listen on.")] = None,
    lost_bookie_recovery_delay: Annotated[
        float | None,
        typer.Option(help="Seconds a bookie must stay gone before its ledgers are re-replicated."),
    ] = None,
    audit_period: Annotated[
        float | None,
        typer.Option(help="Seconds between full audits (entry ranges of every live bookie)."),
    ] = None,
    autorecovery_id: Annotated[
        str | None, typer.Option(help="This process's id in logs and the auditor election.")
    ] = None,
    session_timeout_s: Annotated[
        float | None, typer.Option(help="Metadata session timeout in seconds.")
    ] = None,
    log_level: Annotated[str | None, typer.Option(help="debug, info, warning, error.")] = None,
    log_json: Annotated[
        bool | None, typer.Option("--log-json/--no-log-json", help="Log one JSON object a line.")
    ] = None,
) -> None:
    """Run autorecovery: the elected auditor and a replication worker.

    The auditor marks ledgers that lost copies (a bookie gone longer than
    --lost-bookie-recovery-delay, a bookie being decommissioned, entries missing on a live
    bookie); every autorecovery process copies marked fragments to other bookies. Prints a
    ready line; SIGTERM stops it.
    """
    from magnetar.autorecovery.process import serve
    from magnetar.autorecovery.settings import AutorecoverySettings

    flags: dict[str, Any] = {
        "metadata_url": metadata,
        "http_server_port": http_server_port,
        "bind_address": bind_address,
        "lost_bookie_recovery_delay": lost_bookie_recovery_delay,
        "audit_period": audit_period,
        "autorecovery_id": autorecovery_id,
        "session_timeout_s": session_timeout_s,
        "log_level": log_level,
        "log_json": log_json,
    }
    run_server(AutorecoverySettings, flags, serve)
