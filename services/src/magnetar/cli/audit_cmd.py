"""``magnetar audit``: the replication audits on Spark (needs the ``audit`` extra and Java 17).

``magnetar audit ledgers --metadata URL`` checks every ledger's replicas on the bookies;
``magnetar audit geo --cluster A=URL --cluster B=URL --namespace t/ns`` compares the messages of
geo-replicated clusters. Exit codes: 0 passed, 1 findings, 2 bad input, 3 a bookie, metadata
store or cluster unreachable. The
Spark modules are imported only when a command runs, so ``--help`` works without pyspark.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

audit = typer.Typer(
    help=(
        "Replication audits on Spark: `ledgers` checks every ledger's replicas on the bookies, "
        "`geo` compares geo-replicated clusters' messages."
    ),
    no_args_is_help=True,
)


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _out(text: str) -> None:
    print(text, end="", flush=True)


def _missing_extra(exc: ImportError) -> typer.Exit:
    """Exit 2 after saying that the Spark modules need the ``audit`` extra."""
    _say(
        f"magnetar audit needs the audit extra (pyspark, pyarrow): {exc}. "
        "Install it with: pip install 'magnetar[audit]'"
    )
    return typer.Exit(2)


def _positive(value: int) -> int:
    if value < 1:
        raise typer.BadParameter(f"must be at least 1, got {value}")
    return value


@audit.command("ledgers")
def ledgers(
    metadata: Annotated[
        str, typer.Option(help="Metadata store URL of the cluster: etcd://host:port[,...].")
    ],
    output: Annotated[
        Path | None,
        typer.Option(help="Directory for findings/ (Parquet), summary.json and report.html."),
    ] = None,
    master: Annotated[
        str | None,
        typer.Option(
            help="Spark master (default local[*]; under spark-submit, the one it was given)."
        ),
    ] = None,
    partitions: Annotated[
        int, typer.Option(help="Partitions of the ledger metadata read.", callback=_positive)
    ] = 16,
    splits_per_bookie: Annotated[
        int,
        typer.Option(help="Partitions per bookie listing (ledger id ranges).", callback=_positive),
    ] = 2,
    bookie_timeout: Annotated[
        float, typer.Option(help="Seconds a bookie may take per listing chunk.")
    ] = 30.0,
    bookie_auth_token_file: Annotated[
        str,
        typer.Option(
            envvar="MAGNETAR_AUDIT_BOOKIE_AUTH_TOKEN_FILE",
            help="File holding the token for bookies that authenticate (a role they allow).",
        ),
    ] = "",
) -> None:
    """Check BookKeeper replication of every ledger of the cluster at --metadata.

    Reads ledger metadata, managed ledgers and every registered bookie's entry listing through
    Spark, and reports: entries of closed ledgers missing from a bookie of their write set,
    digest mismatches between replicas, entries no ledger needs, ledgers no managed ledger
    references, managed ledgers pointing at missing ledgers, and entries below their write
    quorum because a bookie is gone. Exit code 0 pass, 1 findings, 3 a bookie or the metadata
    store unreachable.
    """
    try:
        from magnetar.audit.ledgers_job import LedgersAuditOptions, run_ledgers_audit
    except ImportError as exc:
        raise _missing_extra(exc) from exc
    options = LedgersAuditOptions(
        metadata_url=metadata,
        output=output,
        master=master,
        partitions=partitions,
        splits_per_bookie=splits_per_bookie,
        bookie_timeout_s=bookie_timeout,
        bookie_auth_token_file=bookie_auth_token_file,
    )
    raise typer.Exit(int(run_ledgers_audit(options, _say, _out)))


@audit.command("geo")
def geo(
    cluster: Annotated[
        list[str],
        typer.Option(help="NAME=pulsar://host:port, once per cluster (at least two)."),
    ],
    namespace: Annotated[str, typer.Option(help="The replicated namespace, tenant/ns.")],
    output: Annotated[
        Path | None,
        typer.Option(help="Directory for findings/ (Parquet), summary.json and report.html."),
    ] = None,
    master: Annotated[
        str | None,
        typer.Option(
            help="Spark master (default local[*]; under spark-submit, the one it was given)."
        ),
    ] = None,
) -> None:
    """Compare the messages of a namespace's topics across geo-replicated clusters.

    Reads every persistent topic (and partition) of --namespace in every cluster from the
    earliest message and reports, per topic and cluster: messages missing, duplicated, or
    whose payload differs from the origin cluster's; and the replication lag. A message is
    identified by its origin cluster (replicated_from, else where it was published), producer
    name and sequence id. Exit code 0 pass, 1 findings, 3 a cluster unreachable.
    """
    try:
        from magnetar.audit.geo_job import GeoAuditOptions, run_geo_audit
    except ImportError as exc:
        raise _missing_extra(exc) from exc
    options = GeoAuditOptions(
        clusters=tuple(cluster), namespace=namespace, output=output, master=master
    )
    raise typer.Exit(int(run_geo_audit(options, _say, _out)))
