"""The ``magnetar`` command: every sub-command is registered here, in one table.

Each role or tool is defined in its own ``*_cmd`` module as a plain function (one command) or a
``typer.Typer`` (a group of sub-commands); the modules do not know this app, and this module is
the only place that names them, so a newcomer sees every command here. ``magnetar --help``
lists the commands in :data:`COMMANDS`' order, then the groups in :data:`GROUPS`' order.

Sub-commands build their process's one settings object, configure logging, then hand over to
the service package; they hold no logic of their own and import the services lazily, so that
``--help`` stays fast. Called by the ``magnetar`` console script (``magnetar.cli.main:app``).
"""

from __future__ import annotations

from collections.abc import Callable

import typer

from magnetar import __version__
from magnetar.cli import (
    admin_cmd,
    audit_cmd,
    autorecovery_cmd,
    bookie_cmd,
    broker_cmd,
    cluster_cmd,
    consume_cmd,
    perf_cmd,
    produce_cmd,
    proxy_cmd,
    standalone_cmd,
    tokens_cmd,
)

HELP = "Magnetar: a Pulsar-compatible messaging platform. Every sub-command has --help."


def main() -> None:
    """Magnetar: a Pulsar-compatible messaging platform. Every sub-command has --help."""


def version() -> None:
    """Print Magnetar's version."""
    typer.echo(__version__)


COMMANDS: tuple[tuple[str, Callable[..., None]], ...] = (
    ("version", version),
    ("autorecovery", autorecovery_cmd.autorecovery),
    ("bookie", bookie_cmd.bookie),
    ("broker", broker_cmd.broker),
    ("consume", consume_cmd.consume_command),
    ("produce", produce_cmd.produce_command),
    ("proxy", proxy_cmd.proxy),
    ("standalone", standalone_cmd.standalone),
)
GROUPS: tuple[tuple[str, typer.Typer], ...] = (
    ("admin", admin_cmd.admin),
    ("cluster", cluster_cmd.cluster),
    ("perf", perf_cmd.perf),
    ("tokens", tokens_cmd.tokens),
    ("audit", audit_cmd.audit),
)


def build_app() -> typer.Typer:
    """The ``magnetar`` app with every command of :data:`COMMANDS` and :data:`GROUPS`."""
    cli = typer.Typer(
        name="magnetar",
        help=HELP,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    cli.callback()(main)
    for name, command in COMMANDS:
        cli.command(name)(command)
    for name, group in GROUPS:
        cli.add_typer(group, name=name)
    return cli


app = build_app()
