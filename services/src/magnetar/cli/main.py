"""The ``magnetar`` command. Each role or tool is a sub-command defined in its own module here.

Sub-commands build their process's one settings object, configure logging, then hand over to
the service package; they hold no logic of their own.
"""

from __future__ import annotations

import typer

from magnetar import __version__

app = typer.Typer(
    name="magnetar",
    help="Magnetar: a Pulsar-compatible messaging platform. Every sub-command has --help.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def main() -> None:
    """Magnetar: a Pulsar-compatible messaging platform. Every sub-command has --help."""


@app.command()
def version() -> None:
    """Print Magnetar's version."""
    typer.echo(__version__)


def _register() -> None:
    # Sub-command modules register themselves on ``app``; imported here so that
    # ``magnetar --help`` lists them all.
    from magnetar.cli import (
        admin_cmd,  # noqa: F401
        bookie_cmd,  # noqa: F401
        broker_cmd,  # noqa: F401
        consume_cmd,  # noqa: F401
        perf_cmd,  # noqa: F401
        produce_cmd,  # noqa: F401
        standalone_cmd,  # noqa: F401
    )


_register()
