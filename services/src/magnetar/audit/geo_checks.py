"""The geo checks as Spark DataFrame transformations over every cluster's messages.

Input: rows of :data:`~.geo_scans.MESSAGE_SCHEMA` from every audited cluster. Every message
(identity: topic, origin, producer name, sequence id) must be present exactly once in every
audited cluster, with the payload digest it has in its origin cluster. Findings are rows of
:data:`GEO_FINDINGS_SCHEMA`; lag rows of :data:`LAG_SCHEMA`.

Lag, per topic, cluster C and origin O (O another audited cluster): the newest publish time
(as the origin stamped it) of O's messages read in O, minus the newest of those also present
in C (when C has none of them: the span of O's messages); 0 when C has O's newest message;
``behind`` counts O's messages C lacks. It is measured on the origin copy's publish time, so a
replicator that stamps its own time does not hide lag.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from magnetar.audit.findings import GeoKind

GEO_FINDINGS_SCHEMA = (
    "kind STRING, topic STRING, cluster STRING, origin STRING, producer_name STRING, "
    "sequence_id BIGINT, copies BIGINT, detail STRING"
)
GEO_COLUMNS = [part.split()[0] for part in GEO_FINDINGS_SCHEMA.split(", ")]
LAG_SCHEMA = "topic STRING, cluster STRING, origin STRING, lag_ms BIGINT, behind BIGINT"
_IDENTITY = ["topic", "origin", "producer_name", "sequence_id"]


def _shape(frame: DataFrame, kind: GeoKind) -> DataFrame:
    casts = dict(part.split(" ", 1) for part in GEO_FINDINGS_SCHEMA.split(", "))
    columns = {n: F.col(n) if n in frame.columns else F.lit(None) for n in GEO_COLUMNS}
    columns["kind"] = F.lit(str(kind))
    return frame.select(*(columns[n].cast(casts[n]).alias(n) for n in GEO_COLUMNS))


def geo_findings(messages: DataFrame, clusters: Sequence[str]) -> DataFrame:
    copies = messages.groupBy("cluster", *_IDENTITY).agg(
        F.count(F.lit(1)).alias("copies"), F.collect_set("digest").alias("digests")
    )
    identities = copies.select(*_IDENTITY).distinct()
    audited = messages.sparkSession.createDataFrame([(c,) for c in clusters], "cluster STRING")
    missing = (
        identities.crossJoin(F.broadcast(audited))
        .join(copies, ["cluster", *_IDENTITY], "left_anti")
        .withColumn("copies", F.lit(0))
        .withColumn("detail", F.lit("not in this cluster"))
    )
    duplicated = copies.where(F.col("copies") > 1).withColumn(
        "detail", F.concat(F.lit("stored "), F.col("copies").cast("string"), F.lit(" times"))
    )
    origin_digest = copies.where(F.col("cluster") == F.col("origin")).select(
        *_IDENTITY, F.col("digests").alias("origin_digests")
    )
    mismatched = (
        copies.where(F.col("cluster") != F.col("origin"))
        .join(origin_digest, _IDENTITY)
        .where(~F.arrays_overlap("digests", "origin_digests") | (F.size("digests") > 1))
        .withColumn("detail", F.lit("payload digest differs from the origin cluster's"))
    )
    same_digest_twice = copies.where(
        (F.col("cluster") == F.col("origin")) & (F.size("digests") > 1)
    ).withColumn("detail", F.lit("copies in the origin cluster differ"))
    return (
        _shape(missing, GeoKind.MISSING_MESSAGE)
        .unionByName(_shape(duplicated, GeoKind.DUPLICATED_MESSAGE))
        .unionByName(_shape(mismatched, GeoKind.DIGEST_MISMATCH))
        .unionByName(_shape(same_digest_twice, GeoKind.DIGEST_MISMATCH))
    )


def replication_lag(messages: DataFrame, clusters: Sequence[str]) -> DataFrame:
    """Rows of :data:`LAG_SCHEMA` for every topic, cluster and other origin cluster."""
    originals = messages.where(F.col("cluster") == F.col("origin")).select(
        *_IDENTITY, "publish_time"
    )
    audited = messages.sparkSession.createDataFrame([(c,) for c in clusters], "cluster STRING")
    wanted = originals.crossJoin(F.broadcast(audited)).where(F.col("cluster") != F.col("origin"))
    present = messages.select("cluster", *_IDENTITY).distinct().withColumn("here", F.lit(True))
    marked = wanted.join(present, ["cluster", *_IDENTITY], "left")
    return (
        marked.groupBy("topic", "cluster", "origin")
        .agg(
            F.min("publish_time").alias("oldest"),
            F.max("publish_time").alias("newest"),
            F.max(F.when(F.col("here"), F.col("publish_time"))).alias("newest_here"),
            F.sum(F.when(F.col("here").isNull(), 1).otherwise(0)).alias("behind"),
        )
        .select(
            "topic",
            "cluster",
            "origin",
            (F.col("newest") - F.coalesce(F.col("newest_here"), F.col("oldest")))
            .cast("bigint")
            .alias("lag_ms"),
            F.col("behind").cast("bigint").alias("behind"),
        )
    )
