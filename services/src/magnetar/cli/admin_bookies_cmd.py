"""``magnetar admin bookies ...``: the bookies of the cluster and their decommissioning.

- ``bookies list``: every bookie that registered (id, address, rack, state);
- ``bookies list-underreplicated``: the ledgers the auditor marked, with their missing bookies;
- ``bookies decommission BOOKIE``: request the decommission, then wait (printing progress on
  stderr) until it is ``Done`` (exit 0), ``Failed`` (exit 1 with the reason) or ``--timeout``
  passes (exit 1); ``--no-wait`` only requests it;
- ``bookies cancel-decommission BOOKIE``: withdraw the request (the bookie turns writable).

Wiring only; see :mod:`magnetar.cli.admin_cmd` for the output and exit-code rules.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any

import typer

from magnetar.cli.admin_output import render_table
from magnetar.cli.admin_session import call, emit
from magnetar.cli.tool_session import fail

if TYPE_CHECKING:
    from magnetar.client.admin import AdminClient

bookies = typer.Typer(help="The bookies of the cluster; decommission one.", no_args_is_help=True)


def _state(bookie: Mapping[str, Any]) -> str:
    if bookie.get("decommissioning"):
        return "decommissioning"
    if not bookie.get("available", True):
        return "down"
    return "read-only" if bookie.get("readOnly") else "writable"


@bookies.command("list")
def bookies_list(ctx: typer.Context) -> None:
    """List every bookie: id, address, rack and state."""
    found = call(ctx, lambda a: a.list_bookies())
    rows = [(b.get("bookieId"), b.get("address"), b.get("rack"), _state(b)) for b in found]
    emit(
        ctx, {"bookies": found}, lambda: render_table(("BOOKIE", "ADDRESS", "RACK", "STATE"), rows)
    )


@bookies.command("list-underreplicated")
def bookies_under_replicated(ctx: typer.Context) -> None:
    """List the ledgers marked under-replicated and the bookies they miss."""
    found = dict(call(ctx, lambda a: a.list_under_replicated()))
    ledgers = found.get("ledgers") or []
    rows = [(lg.get("ledgerId"), ",".join(lg.get("missingBookies", []))) for lg in ledgers]
    emit(ctx, found, lambda: render_table(("LEDGER", "MISSING BOOKIES"), rows))


@bookies.command("decommission")
def bookies_decommission(
    ctx: typer.Context,
    bookie: Annotated[str, typer.Argument(help="The bookie's id.", show_default=False)],
    timeout: Annotated[
        float, typer.Option(help="Seconds to wait for Done before giving up (exit 1).")
    ] = 600.0,
    wait: Annotated[
        bool, typer.Option("--wait/--no-wait", help="Wait until the decommission is Done.")
    ] = True,
) -> None:
    """Decommission a bookie: no new ensembles on it, its ledgers copied elsewhere.

    Needs an autorecovery process running (`magnetar autorecovery`) to copy the ledgers.
    """

    async def run(admin: AdminClient) -> Mapping[str, Any]:
        await admin.decommission_bookie(bookie)
        status = await admin.get_decommission(bookie)
        if not wait:
            return status
        deadline = time.monotonic() + timeout
        last = None
        while status.get("state") == "InProgress" and time.monotonic() < deadline:
            remaining = status.get("ledgersRemaining")
            if remaining != last:
                typer.echo(f"decommissioning {bookie}: {remaining} ledger(s) remaining", err=True)
                last = remaining
            await asyncio.sleep(1.0)
            status = await admin.get_decommission(bookie)
        return status

    status = dict(call(ctx, run))
    state = status.get("state")
    if wait and state == "InProgress":
        raise fail(
            f"decommission of {bookie} not done within {timeout:g}s: {status.get('message')} "
            "(run the command again to keep waiting)"
        )
    if state == "Failed":
        raise fail(f"decommission of {bookie} failed: {status.get('message')}")
    emit(ctx, status, lambda: f"{state}: {status.get('message')}")


@bookies.command("cancel-decommission")
def bookies_cancel_decommission(
    ctx: typer.Context,
    bookie: Annotated[str, typer.Argument(help="The bookie's id.", show_default=False)],
) -> None:
    """Cancel a bookie's decommission: it takes new ensembles again."""
    call(ctx, lambda a: a.cancel_decommission(bookie))
