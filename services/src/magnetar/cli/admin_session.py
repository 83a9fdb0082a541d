"""What every ``magnetar admin`` command shares: the global options, the one call, the output.

``magnetar admin``'s callback stores an :class:`AdminOptions` in the click context; a command
calls :func:`call` with an ``async`` function of an ``AdminClient``, which runs it in
``asyncio.run`` with a fresh client and turns every admin error into ``error: <reason> (HTTP
<status>)`` on stderr and exit code 1. Bad argument values (a duration, a size, a topic name)
are usage errors: :func:`usage_value` raises ``typer.BadParameter`` and click exits with 2.
:func:`emit` prints a value as JSON under ``--json`` and as the command's table otherwise
(:func:`emit_names` for a list of names, :func:`emit_fields` for one object).

Wiring only: parsing lives in ``magnetar.client.admin_units`` and ``magnetar.naming``, rendering in
``magnetar.cli.admin_output``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any, Protocol, TypeVar

import typer

from magnetar.cli.admin_output import render_fields, render_json
from magnetar.cli.tool_session import fail
from magnetar.client.admin_errors import AdminError
from magnetar.client.admin_models import DEFAULT_WEB_SERVICE_URL
from magnetar.naming import NamespaceName, TopicName

if TYPE_CHECKING:
    from magnetar.client.admin import AdminClient
    from magnetar.client.settings import TlsOptions

T = TypeVar("T")
V = TypeVar("V")


class JsonValue(Protocol):
    """An admin client value (ClusterData, TenantInfo, LookupData ...)."""

    def to_json(self) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class AdminOptions:
    admin_url: str
    json_output: bool = False
    auth_token: str | None = None
    timeout_s: float = 30.0
    tls: TlsOptions | None = None  # for https:// admin URLs


def _options(ctx: typer.Context) -> AdminOptions:
    opts = ctx.find_object(AdminOptions)
    return opts if opts is not None else AdminOptions(DEFAULT_WEB_SERVICE_URL)


def call(ctx: typer.Context, op: Callable[[AdminClient], Awaitable[T]]) -> T:
    """Run ``op`` against the admin API; exit 1 with the server's reason if it fails."""
    from magnetar.client.admin import AdminClient  # httpx loads only for admin commands

    opts = _options(ctx)

    async def run() -> T:
        client = AdminClient(
            opts.admin_url, timeout_s=opts.timeout_s, auth_token=opts.auth_token, tls=opts.tls
        )
        async with client:
            return await op(client)

    try:
        return asyncio.run(run())
    except AdminError as exc:
        status = f" (HTTP {exc.status})" if exc.status else ""
        raise fail(f"{exc.reason}{status}") from exc


def emit(ctx: typer.Context, value: object, table: Callable[[], str] | None = None) -> None:
    """Print ``value``: JSON with ``--json`` or without a table renderer, else the table."""
    if table is None or _options(ctx).json_output:
        typer.echo(render_json(value))
    else:
        text = table()
        if text:
            typer.echo(text)


def emit_names(ctx: typer.Context, names: list[str]) -> None:
    """Print a list of names: one per line, or a JSON array with ``--json``."""
    emit(ctx, names, lambda: "\n".join(names))


def emit_fields(ctx: typer.Context, value: JsonValue) -> None:
    """Print one object: its ``to_json()`` fields as ``name  value`` lines, or JSON."""
    emit(ctx, value, lambda: render_fields(list(value.to_json().items())))


def usage_value(parse: Callable[[str], V], text: str, option: str) -> V:
    """``parse(text)``, with a ValueError turned into a usage error naming ``option``."""
    try:
        return parse(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint=option) from exc


def _check_topic(text: str) -> str:
    usage_value(partial(TopicName.parse, strict=False), text, "TOPIC")
    return text


def _check_namespace(text: str) -> str:
    usage_value(partial(NamespaceName.parse, strict=False), text, "NAMESPACE")
    return text


TopicArg = Annotated[
    str,
    typer.Argument(
        help="persistent://tenant/namespace/topic, tenant/namespace/topic, or a name in "
        "public/default.",
        callback=_check_topic,
        metavar="TOPIC",
        show_default=False,
    ),
]
NamespaceArg = Annotated[
    str,
    typer.Argument(
        help="tenant/namespace.", callback=_check_namespace, metavar="NAMESPACE", show_default=False
    ),
]
SubscriptionOpt = Annotated[
    str, typer.Option("--subscription", "-s", help="Subscription name.", show_default=False)
]
ForceOpt = Annotated[
    bool, typer.Option("--force", "-f", help="Also when it is in use or has children.")
]
