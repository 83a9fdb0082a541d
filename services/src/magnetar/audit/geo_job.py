"""``magnetar audit geo``: check that geo-replicated clusters hold the same messages.

Steps: the driver lists the namespace's persistent topics (and partitions) in every cluster
through the binary protocol (an unreachable cluster ends the audit with exit code 3, naming
it); Spark reads every (cluster, topic) from the earliest message (:mod:`.geo_sources`),
persisted to local disk; the checks of :mod:`.geo_checks` give the findings (Parquet) and the
lag table; only counts, the lag table (topics x clusters x origins) and a sample reach the
driver. Exit code: :class:`~.findings.ExitCode`.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from magnetar.audit import geo_scans
from magnetar.audit.errors import BadAuditInput, Unreachable
from magnetar.audit.findings import ExitCode, GeoKind, KindCount, Summary
from magnetar.audit.geo_checks import GEO_COLUMNS, geo_findings, replication_lag
from magnetar.audit.geo_sources import TOPIC_MESSAGES
from magnetar.audit.report import html_report, summary_json, terminal_table
from magnetar.audit.spark import run_on_spark

Say = Callable[[str], None]


@dataclass(frozen=True)
class GeoAuditOptions:
    clusters: tuple[str, ...]  # NAME=pulsar://host:port
    namespace: str
    output: Path | None = None
    master: str | None = None
    sample: int = 50


def run_geo_audit(
    options: GeoAuditOptions, say: Say, out: Say, spark: SparkSession | None = None
) -> ExitCode:
    started = time.monotonic()
    try:
        clusters = geo_scans.parse_clusters(list(options.clusters))
        namespace = geo_scans.check_namespace(options.namespace)
        say(f"audit: listing the topics of {namespace} in {', '.join(sorted(clusters))}")
        topics = asyncio.run(geo_scans.list_all_topics(clusters, namespace))
        for name in sorted(topics):
            say(f"audit: cluster {name}: {len(topics[name])} topics")
    except BadAuditInput as exc:
        say(f"audit: {exc}")
        return ExitCode.BAD_INPUT
    except Unreachable as exc:
        say(f"audit: {exc.describe()}")
        return ExitCode.UNREACHABLE

    def report(summary: Summary) -> None:
        if options.output is not None:
            _write_reports(options.output, summary)
            say(f"audit: report written to {options.output}")
        out(terminal_table(summary, GEO_COLUMNS))

    def audit(active: SparkSession) -> Summary:
        return _audit(active, options, clusters, topics, namespace, say, started)

    return run_on_spark(spark, options.master, audit, report, say)


def _audit(
    spark: SparkSession,
    options: GeoAuditOptions,
    clusters: dict[str, str],
    topics: dict[str, list[str]],
    namespace: str,
    say: Say,
    started: float,
) -> Summary:
    say("audit: reading every topic of every cluster from the earliest message")
    messages = (
        spark.read.format(TOPIC_MESSAGES)
        .option("clusters", json.dumps(clusters))
        .option("topics", json.dumps(topics))
        .load()
        .persist(StorageLevel.DISK_ONLY)
    )
    read = {r["cluster"]: r["count"] for r in messages.groupBy("cluster").count().collect()}
    for name in clusters:
        say(f"audit: cluster {name}: {read.get(name, 0)} messages read")
    names = sorted(clusters)
    findings = geo_findings(messages, names)
    if options.output is not None:
        path = str(options.output / "findings")
        say(f"audit: writing findings to {path}")
        findings.write.mode("overwrite").parquet(path)
        findings = spark.read.parquet(path)
    else:
        findings = findings.persist(StorageLevel.DISK_ONLY)
    counts = {
        r["kind"]: KindCount(r["n"], r["n"])
        for r in findings.groupBy("kind").agg(F.count(F.lit(1)).alias("n")).collect()
    }
    missing_by_cluster = {
        r["cluster"]: r["n"]
        for r in findings.where(F.col("kind") == str(GeoKind.MISSING_MESSAGE))
        .groupBy("cluster")
        .agg(F.count(F.lit(1)).alias("n"))
        .collect()
    }
    lag = [
        r.asDict()
        for r in replication_lag(messages, names).orderBy("topic", "cluster", "origin").collect()
    ]
    sample = tuple(
        r.asDict()
        for r in findings.orderBy(
            "kind", "topic", "cluster", "origin", "producer_name", "sequence_id"
        )
        .limit(options.sample)
        .collect()
    )
    max_lag: dict[str, int] = {}
    for row in lag:
        max_lag[row["cluster"]] = max(max_lag.get(row["cluster"], 0), row["lag_ms"])
    messages.unpersist()
    return Summary(
        "geo",
        f"{namespace} in {', '.join(f'{n}={u}' for n, u in sorted(clusters.items()))}",
        time.monotonic() - started,
        counts,
        {
            "clusters": names,
            "topicsByCluster": {n: len(t) for n, t in sorted(topics.items())},
            "messagesReadByCluster": dict(sorted(read.items())),
        },
        missing_by_cluster,
        sample,
        {"lag": lag, "maxLagMsByCluster": dict(sorted(max_lag.items()))},
    )


def _write_reports(output: Path, summary: Summary) -> None:
    output.mkdir(parents=True, exist_ok=True)
    (output / "summary.json").write_text(summary_json(summary))
    lag = summary.details.get("maxLagMsByCluster", {})
    charts = [
        ("Findings per kind", {k: float(c.findings) for k, c in summary.findings.items()}, ""),
        (
            "Missing messages per cluster",
            {k: float(v) for k, v in summary.under_replicated_by_bookie.items()},
            "messages",
        ),
        ("Replication lag per cluster (largest)", {k: float(v) for k, v in lag.items()}, "ms"),
    ]
    (output / "report.html").write_text(html_report(summary, GEO_COLUMNS, charts))
