"""The ledger checks as Spark DataFrame transformations: inputs in, findings out.

Inputs (schemas in :mod:`.scans`): ``ledgers`` (metadata), ``references`` (what managed
ledgers reference), ``entries`` (what registered bookies hold), and the ids of the registered
bookies (small: a literal list). Output: rows of :data:`~.findings.FINDINGS_SCHEMA`, entry
ids merged into ranges (consecutive ids, same kind, ledger, bookie and detail).

The expected replicas of a closed ledger are computed as BookKeeper stripes them
(:func:`magnetar.ledger.distribution.write_set`): entry ``e`` of a segment with ensemble ``B``
lives on ``B[(e + i) mod E]`` for ``i`` in ``0..Wq-1``. Only closed ledgers are checked for
missing entries and lost quorums (an open ledger's tail is its writer's, and recovery's,
business); every ledger's entries are checked for being where a segment puts them.

Pure transformations: nothing is collected; Spark decides where and when they run.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from magnetar.audit.findings import FINDINGS_SCHEMA, Kind
from magnetar.audit.scans import UNREADABLE

_WRITE_SET = (
    "transform(sequence(0, write_quorum - 1), "
    "i -> try_element_at(bookies, cast((entry_id + i) % ensemble_size AS INT) + 1))"
)
_FINDING_COLUMNS = [part.split()[0] for part in FINDINGS_SCHEMA.split(", ")]


def expected_replicas(ledgers: DataFrame) -> DataFrame:
    """(ledger_id, entry_id, bookie) for every entry of every closed ledger and every bookie
    of its write set."""
    segments = ledgers.where(F.col("state") == "CLOSED").select(
        "ledger_id", "ensemble_size", "write_quorum", F.explode("segments").alias("s")
    )
    entries = segments.where(F.col("s.last_entry_id") >= F.col("s.first_entry_id")).select(
        "ledger_id",
        "ensemble_size",
        "write_quorum",
        F.col("s.bookies").alias("bookies"),
        F.explode(F.sequence(F.col("s.first_entry_id"), F.col("s.last_entry_id"))).alias(
            "entry_id"
        ),
    )
    return entries.select("ledger_id", "entry_id", F.explode(F.expr(_WRITE_SET)).alias("bookie"))


def _ranges(rows: DataFrame, kind: Kind) -> DataFrame:
    """Consecutive entry ids of (ledger, bookie, detail) merged into one finding each."""
    keys = ["ledger_id", "bookie", "detail"]
    order = Window.partitionBy(*keys).orderBy("entry_id")
    grouped = rows.withColumn("run", F.col("entry_id") - F.row_number().over(order))
    merged = grouped.groupBy(*keys, "run").agg(
        F.min("entry_id").alias("first_entry"),
        F.max("entry_id").alias("last_entry"),
        F.count(F.lit(1)).alias("entries"),
    )
    return _shape(merged, kind)


def _shape(frame: DataFrame, kind: Kind, **given: Column) -> DataFrame:
    columns = {name: F.lit(None) for name in _FINDING_COLUMNS}
    columns.update({name: F.col(name) for name in _FINDING_COLUMNS if name in frame.columns})
    columns["kind"] = F.lit(str(kind))
    columns.update(given)
    casts = dict(part.split(" ", 1) for part in FINDINGS_SCHEMA.split(", "))
    return frame.select(*(columns[n].cast(casts[n]).alias(n) for n in _FINDING_COLUMNS))


def missing_and_lost(
    expected: DataFrame, entries: DataFrame, registered: Sequence[str]
) -> list[DataFrame]:
    """Missing entries on registered bookies; entries whose write-set bookie is gone."""
    live = F.col("bookie").isin(list(registered))
    present = entries.select("ledger_id", "entry_id", "bookie")
    missing = (
        expected.where(live)
        .join(present, ["ledger_id", "entry_id", "bookie"], "left_anti")
        .withColumn("detail", F.lit("not on this bookie of the write set"))
    )
    lost = expected.where(~live).withColumn(
        "detail", F.lit("bookie of the write set is gone (not registered)")
    )
    return [_ranges(missing, Kind.MISSING_ENTRIES), _ranges(lost, Kind.UNDER_REPLICATED)]


def digest_mismatches(entries: DataFrame) -> DataFrame:
    """Replicas whose stored digest is out of the majority of their entry's replicas (all of
    them when no digest has a strict majority)."""
    by_digest = entries.groupBy("ledger_id", "entry_id", "digest").agg(
        F.count(F.lit(1)).alias("n"), F.collect_list("bookie").alias("holders")
    )
    per_entry = Window.partitionBy("ledger_id", "entry_id")
    ranked = (
        by_digest.withColumn("digests", F.count(F.lit(1)).over(per_entry))
        .withColumn("top", F.max("n").over(per_entry))
        .withColumn(
            "tops", F.sum(F.when(F.col("n") == F.col("top"), 1).otherwise(0)).over(per_entry)
        )
    )
    wrong = ranked.where(
        (F.col("digests") > 1) & ((F.col("n") < F.col("top")) | (F.col("tops") > 1))
    ).select(
        "ledger_id",
        "entry_id",
        F.explode("holders").alias("bookie"),
        F.when(F.col("tops") > 1, F.lit("replicas disagree, no majority digest"))
        .otherwise(F.lit("digest differs from the other replicas"))
        .alias("detail"),
    )
    return _ranges(wrong, Kind.DIGEST_MISMATCH)


def extra_entries(
    ledgers: DataFrame, entries: DataFrame, ledgers_after: DataFrame | None = None
) -> DataFrame:
    """Entries a bookie holds that no ledger needs. With ``ledgers_after`` (the metadata read
    again after the listings), a ledger created meanwhile is not "without metadata"."""
    meta = ledgers.where(F.col("state") != UNREADABLE).select(
        "ledger_id", "state", "ensemble_size", "write_quorum", "last_entry_id", "segments"
    )
    joined = entries.join(F.broadcast(meta), "ledger_id", "left")
    segment = F.try_element_at(
        F.filter("segments", lambda s: s["first_entry_id"] <= F.col("entry_id")), F.lit(-1)
    )
    placed = joined.withColumn("bookies", segment["bookies"]).withColumn(
        "in_write_set", F.array_contains(F.expr(_WRITE_SET), F.col("bookie"))
    )
    detail = (
        F.when(F.col("state").isNull(), F.lit("ledger has no metadata"))
        .when(
            (F.col("state") == "CLOSED") & (F.col("entry_id") > F.col("last_entry_id")),
            F.lit("past the closed ledger's last entry"),
        )
        .when(~F.coalesce(F.col("in_write_set"), F.lit(False)), F.lit("not in the write set"))
    )
    extra = placed.withColumn("detail", detail).where(F.col("detail").isNotNull())
    unreadable = ledgers.where(F.col("state") == UNREADABLE).select("ledger_id")
    extra = extra.join(F.broadcast(unreadable), "ledger_id", "left_anti")
    if ledgers_after is not None:
        born = ledgers_after.select("ledger_id").withColumn("born", F.lit(True))
        extra = extra.join(F.broadcast(born), "ledger_id", "left").where(
            F.col("born").isNull() | F.col("state").isNotNull()
        )
    return _ranges(extra.select("ledger_id", "entry_id", "bookie", "detail"), Kind.EXTRA_ENTRIES)


def reference_findings(ledgers: DataFrame, references: DataFrame) -> list[DataFrame]:
    """Ledgers no managed ledger references; references to ledgers that do not exist."""
    ids = ledgers.select("ledger_id")
    readable = ledgers.where(F.col("state") != UNREADABLE)
    unreferenced = readable.join(references.select("ledger_id"), "ledger_id", "left_anti").select(
        "ledger_id",
        F.concat(
            F.lit("state "),
            F.col("state"),
            F.lit(", last entry "),
            F.col("last_entry_id").cast("string"),
        ).alias("detail"),
        F.when(F.col("last_entry_id") >= 0, F.col("last_entry_id") + 1).alias("entries"),
    )
    missing = references.join(ids, "ledger_id", "left_anti").select(
        "ledger_id",
        "managed_ledger",
        F.concat(F.lit("referenced as "), F.col("role"), F.lit(", no metadata")).alias("detail"),
    )
    return [_shape(unreferenced, Kind.UNREFERENCED_LEDGER), _shape(missing, Kind.MISSING_LEDGER)]


def unreadable(ledgers: DataFrame) -> DataFrame:
    bad = ledgers.where(F.col("state") == UNREADABLE).select(
        "ledger_id", F.lit("ledger metadata does not decode").alias("detail")
    )
    return _shape(bad, Kind.UNREADABLE_METADATA)


def ledger_findings(
    ledgers: DataFrame,
    references: DataFrame,
    entries: DataFrame,
    registered: Sequence[str],
    ledgers_after: DataFrame | None = None,
) -> DataFrame:
    """Every finding of every ledger check, as one DataFrame.

    ``ledgers_after``, the metadata read again once the bookies were listed, keeps a live
    cluster's churn out of the findings: a ledger deleted meanwhile (its bookies dropped its
    entries) is not checked for missing entries, and one created meanwhile does not make its
    entries "without metadata"."""
    stable = ledgers
    if ledgers_after is not None:
        stable = ledgers.join(ledgers_after.select("ledger_id"), "ledger_id", "left_semi")
    parts = [
        *missing_and_lost(expected_replicas(stable), entries, registered),
        digest_mismatches(entries),
        extra_entries(ledgers, entries, ledgers_after),
        *reference_findings(ledgers, references),
        unreadable(ledgers),
    ]
    result = parts[0]
    for part in parts[1:]:
        result = result.unionByName(part)
    return result
