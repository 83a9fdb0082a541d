"""``magnetar audit ledgers``: check BookKeeper replication of every ledger of a cluster.

Steps (each announced on the progress stream):

1. the driver reads the registered bookies and the highest ledger id from the metadata store
   and probes every registered bookie (``GetInfo``): anything unreachable ends the audit with
   :attr:`~.findings.ExitCode.UNREACHABLE`, naming it;
2. Spark reads the ledger metadata and the managed ledgers' references (small, kept in the
   executors) and every bookie's listing (streamed by executors, kept on their local disk so
   it is listed once); each is checkpointed locally, which also cuts the data sources out of
   the checks' plans (Spark would otherwise analyse them again at every step);
3. the checks of :mod:`.checks` produce the findings, written as a Parquet dataset;
4. only small aggregates come back to the driver: counts per kind, under-replicated entries per
   bookie, entries listed per bookie, and a sample of findings; from them ``summary.json``,
   ``report.html`` and the terminal table.

Exit code: :class:`~.findings.ExitCode`.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from magnetar.audit import checks, scans
from magnetar.audit.errors import BadAuditInput, Unreachable
from magnetar.audit.findings import (
    FINDINGS_SCHEMA,
    UNDER_REPLICATION_KINDS,
    ExitCode,
    KindCount,
    Summary,
)
from magnetar.audit.report import html_report, summary_json, terminal_table
from magnetar.audit.sources import BOOKIE_ENTRIES, LEDGERS, REFERENCES
from magnetar.audit.spark import run_on_spark

PROBE_TIMEOUT_S = 10.0
COLUMNS = [part.split()[0] for part in FINDINGS_SCHEMA.split(", ")]


@dataclass(frozen=True)
class LedgersAuditOptions:
    metadata_url: str
    output: Path | None = None
    master: str | None = None  # local[*], or spark-submit's (magnetar.audit.spark.session)
    partitions: int = 16
    splits_per_bookie: int = 2
    chunk_entries: int = 0
    bookie_timeout_s: float = 30.0
    sample: int = 50
    # A file holding the Bearer token for bookies that authenticate (read by the driver and
    # by each Spark task; only the path travels in the job's options).
    bookie_auth_token_file: str = ""


Say = Callable[[str], None]


def run_ledgers_audit(
    options: LedgersAuditOptions,
    say: Say,
    out: Say,
    spark: SparkSession | None = None,
) -> ExitCode:
    """Run the audit; ``say`` gets progress lines, ``out`` the final table. A given ``spark``
    session is used and left running; otherwise one is built and stopped at the end."""
    started = time.monotonic()
    url = options.metadata_url
    say(f"audit: reading the cluster's bookies from {url}")
    try:
        token = scans.read_token_file(options.bookie_auth_token_file)
        view = asyncio.run(scans.discover(url))
        asyncio.run(scans.probe_bookies(view.bookies, PROBE_TIMEOUT_S, token))
    except Unreachable as exc:
        say(f"audit: {exc.describe()}")
        return ExitCode.UNREACHABLE
    except BadAuditInput as exc:
        say(f"audit: {exc}")
        return ExitCode.BAD_INPUT
    say(
        f"audit: {len(view.bookies)} bookies registered, ledger ids up to {view.max_ledger_id}, "
        f"{view.managed_ledgers} managed ledgers"
    )

    def report(summary: Summary) -> None:
        if options.output is not None:
            _write_reports(options.output, summary)
            say(f"audit: report written to {options.output}")
        out(terminal_table(summary, COLUMNS))

    def audit(active: SparkSession) -> Summary:
        return _audit(active, options, view, say, started)

    return run_on_spark(spark, options.master, audit, report, say)


def _audit(
    spark: SparkSession,
    options: LedgersAuditOptions,
    view: scans.ClusterView,
    say: Say,
    started: float,
) -> Summary:
    url = options.metadata_url
    say("audit: reading ledger metadata and managed ledger references")
    ledgers = _read_ledgers(spark, options, view).localCheckpoint()
    references = (
        spark.read.format(REFERENCES)
        .option("metadata", url)
        .option("partitions", str(options.partitions))
        .load()
        .localCheckpoint()
    )
    states = {r["state"]: r["count"] for r in ledgers.groupBy("state").count().collect()}
    named = {
        r["bookie"]
        for r in ledgers.select(F.explode("segments.bookies").alias("b"))
        .select(F.explode("b").alias("bookie"))
        .distinct()
        .collect()
    }
    gone = sorted(named - set(view.bookies))
    say(
        f"audit: {sum(states.values())} ledgers ({states.get('CLOSED', 0)} closed), "
        f"{references.count()} managed ledger references; bookies gone: {gone or 'none'}"
    )
    say(f"audit: listing the entries of {len(view.bookies)} bookies")
    entries = (
        spark.read.format(BOOKIE_ENTRIES)
        .option("bookies", json.dumps(view.bookies))
        .option("max_ledger_id", str(view.max_ledger_id))
        .option("splits_per_bookie", str(options.splits_per_bookie))
        .option("chunk_entries", str(options.chunk_entries))
        .option("timeout_s", str(options.bookie_timeout_s))
        .option("auth_token_file", options.bookie_auth_token_file)
        .load()
        .localCheckpoint(storageLevel=StorageLevel.DISK_ONLY)
    )
    listed = {r["bookie"]: r["count"] for r in entries.groupBy("bookie").count().collect()}
    for bookie in sorted(view.bookies):
        say(f"audit: bookie {bookie}: {listed.get(bookie, 0)} entries listed")
    # Read once more: what changed while the bookies were listed is not a finding.
    ledgers_after = _read_ledgers(spark, options, view).select("ledger_id").localCheckpoint()
    say("audit: checking replicas, digests and references")
    findings = checks.ledger_findings(
        ledgers, references, entries, sorted(view.bookies), ledgers_after
    )
    findings = _materialise(spark, findings, options.output, say)
    summary = _summarise(findings, options, started, url)
    entries.unpersist()
    scanned = {
        "ledgers": sum(states.values()),
        "closedLedgers": states.get("CLOSED", 0),
        "managedLedgers": view.managed_ledgers,
        "registeredBookies": sorted(view.bookies),
        "goneBookies": gone,
        "entriesListed": sum(listed.values()),
        "entriesListedByBookie": dict(sorted(listed.items())),
    }
    return replace(summary, duration_s=time.monotonic() - started, scanned=scanned)


def _read_ledgers(
    spark: SparkSession, options: LedgersAuditOptions, view: scans.ClusterView
) -> DataFrame:
    return (
        spark.read.format(LEDGERS)
        .option("metadata", options.metadata_url)
        .option("max_ledger_id", str(view.max_ledger_id))
        .option("partitions", str(options.partitions))
        .load()
    )


def _materialise(
    spark: SparkSession, findings: DataFrame, output: Path | None, say: Say
) -> DataFrame:
    """Findings written once (Parquet under ``output``, else Spark's local disk), read back."""
    if output is None:
        kept = findings.persist(StorageLevel.DISK_ONLY)
        kept.count()
        return kept
    path = str(output / "findings")
    say(f"audit: writing findings to {path}")
    findings.coalesce(max(1, spark.sparkContext.defaultParallelism)).write.mode(
        "overwrite"
    ).parquet(path)
    return spark.read.parquet(path)


def _summarise(
    findings: DataFrame, options: LedgersAuditOptions, started: float, url: str
) -> Summary:
    counts = {
        r["kind"]: KindCount(r["findings"], r["entries"])
        for r in findings.groupBy("kind")
        .agg(
            F.count(F.lit(1)).alias("findings"),
            F.coalesce(F.sum("entries"), F.lit(0)).alias("entries"),
        )
        .collect()
    }
    by_bookie = {
        r["bookie"]: r["entries"]
        for r in findings.where(F.col("kind").isin([str(k) for k in UNDER_REPLICATION_KINDS]))
        .groupBy("bookie")
        .agg(F.sum("entries").alias("entries"))
        .collect()
    }
    sample = tuple(
        r.asDict()
        for r in findings.orderBy("kind", "ledger_id", "bookie", "first_entry")
        .limit(options.sample)
        .collect()
    )
    return Summary("ledgers", url, time.monotonic() - started, counts, {}, by_bookie, sample)


def _write_reports(output: Path, summary: Summary) -> None:
    output.mkdir(parents=True, exist_ok=True)
    (output / "summary.json").write_text(summary_json(summary))
    charts = [
        ("Findings per kind", {k: float(c.findings) for k, c in summary.findings.items()}, ""),
        (
            "Under-replicated entries per bookie",
            {k: float(v) for k, v in summary.under_replicated_by_bookie.items()},
            "entries",
        ),
    ]
    (output / "report.html").write_text(html_report(summary, COLUMNS, charts))
