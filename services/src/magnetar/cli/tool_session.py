"""What ``magnetar produce``, ``consume`` and ``perf`` share on the command line.

:func:`run_tool` runs a tool coroutine in ``asyncio.run`` with quiet client logs, and turns any
failure into one ``error: ...`` line on stderr (worded by :func:`magnetar.tools.errors.explain`)
and exit code 1; Ctrl-C exits 130. Wiring only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Annotated, Any, TypeVar

import typer

from magnetar.errors import MagnetarError
from magnetar.telemetry import configure_logging
from magnetar.tools.errors import explain
from magnetar.tools.session import DEFAULT_SERVICE_URL

T = TypeVar("T")

ServiceUrlOpt = Annotated[
    str,
    typer.Option(
        "--service-url",
        envvar="MAGNETAR_SERVICE_URL",
        help="The broker's binary protocol URL.",
    ),
]
DEFAULT_URL = DEFAULT_SERVICE_URL


def fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(1)


def run_tool(
    main: Callable[[], Coroutine[Any, Any, T]], *, service_url: str, topic: str | None
) -> T:
    """``asyncio.run(main())``; a MagnetarError becomes ``error: ...`` and exit 1."""
    configure_logging("error")
    try:
        return asyncio.run(main())
    except MagnetarError as exc:
        raise fail(explain(exc, service_url=service_url, topic=topic)) from exc
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
