"""``magnetar admin brokers ...`` and ``magnetar admin broker-stats ...``, after pulsar-admin.

- ``brokers list CLUSTER``: the live brokers' web addresses;
- ``brokers leader-broker``: the load manager's leader (``brokerId``, ``serviceUrl``);
- ``brokers health``: ``ok`` when the broker serves and its metadata store answers;
- ``brokers owned-namespaces CLUSTER BROKER``: the bundles a broker (web ``host:port``) owns;
- ``broker-stats load-report``: the broker's load report (always JSON: it is nested);
- ``broker-stats topics``: the stats of the broker's topics by namespace and bundle (JSON);
- ``broker-stats monitoring-metrics``: the broker's namespace metrics (JSON).

Wiring only; see :mod:`magnetar.cli.admin_cmd` for the output and exit-code rules.
"""

from __future__ import annotations

from typing import Annotated

import typer

from magnetar.cli.admin_output import render_fields, render_table
from magnetar.cli.admin_session import call, emit, emit_names

brokers = typer.Typer(help="The brokers of a cluster and its leader.", no_args_is_help=True)
broker_stats = typer.Typer(help="A broker's load and statistics.", no_args_is_help=True)

Cluster = Annotated[str, typer.Argument(help="The cluster's name.", show_default=False)]


@brokers.command("list")
def brokers_list(ctx: typer.Context, cluster: Cluster) -> None:
    """List the live brokers of a cluster (web host:port)."""
    emit_names(ctx, call(ctx, lambda a: a.list_brokers(cluster)))


@brokers.command("leader-broker")
def brokers_leader(ctx: typer.Context) -> None:
    """Show the load manager's leader broker."""
    leader = dict(call(ctx, lambda a: a.get_leader_broker()))
    emit(ctx, leader, lambda: render_fields(list(leader.items())))


@brokers.command("health")
def brokers_health(ctx: typer.Context) -> None:
    """Check that the broker serves and reaches its metadata store (prints ok)."""
    typer.echo(call(ctx, lambda a: a.healthcheck()))


@brokers.command("owned-namespaces")
def brokers_owned(
    ctx: typer.Context,
    cluster: Cluster,
    broker: Annotated[str, typer.Argument(help="The broker's web host:port.", show_default=False)],
) -> None:
    """List the namespace bundles a broker owns."""
    owned = dict(call(ctx, lambda a: a.get_owned_namespaces(cluster, broker)))
    rows = [(name, s.get("broker_assignment"), s.get("is_active")) for name, s in owned.items()]
    emit(ctx, owned, lambda: render_table(("BUNDLE", "ASSIGNMENT", "ACTIVE"), rows))


@broker_stats.command("load-report")
def stats_load_report(ctx: typer.Context) -> None:
    """Print the broker's load report (JSON)."""
    emit(ctx, dict(call(ctx, lambda a: a.get_load_report())))


@broker_stats.command("topics")
def stats_topics(ctx: typer.Context) -> None:
    """Print the stats of the broker's topics, by namespace and bundle (JSON)."""
    emit(ctx, dict(call(ctx, lambda a: a.get_broker_topics_stats())))


@broker_stats.command("monitoring-metrics")
def stats_monitoring_metrics(ctx: typer.Context) -> None:
    """Print the broker's namespace metrics (JSON)."""
    emit(ctx, [dict(m) for m in call(ctx, lambda a: a.get_broker_metrics())])
