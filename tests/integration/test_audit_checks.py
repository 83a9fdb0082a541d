"""The ledger checks (``magnetar.audit.checks``) on small hand-made DataFrames, in the test
session's one SparkSession: striping, merged ranges, majority digests, and a live cluster's
churn (ledgers created or deleted while the bookies were listed) kept out of the findings.
One test, two check runs: Spark plans are slow to run however small the data."""

from __future__ import annotations

from typing import Any

import pytest

from magnetar.audit.checks import ledger_findings
from magnetar.audit.scans import ENTRY_SCHEMA, LEDGER_SCHEMA, REFERENCE_SCHEMA

# A Spark test may pay for starting the session's JVM: more than the default 120 s under load.
pytestmark = pytest.mark.timeout(300)

BOOKIES = ["a", "b", "c"]


def ledger(ledger_id: int, last: int, bookies: list[str] = BOOKIES) -> tuple[object, ...]:
    return (ledger_id, "CLOSED", 3, 2, 2, last, 0, 0, [(0, last, bookies)], {})


def replicas(ledger_id: int, last: int, digest: int = 7) -> list[tuple[object, ...]]:
    """Every replica of an E3 Wq2 ledger on a, b, c (entry e on positions e%3, (e+1)%3)."""
    return [
        (BOOKIES[(e + i) % 3], ledger_id, e, 10, digest) for e in range(last + 1) for i in range(2)
    ]


def findings(
    spark: Any, ledgers: list[Any], entries: list[Any], after: list[Any] | None
) -> set[Any]:
    frame = ledger_findings(
        spark.createDataFrame(ledgers, LEDGER_SCHEMA),
        spark.createDataFrame([("ml", i[0], "ledger") for i in ledgers], REFERENCE_SCHEMA),
        spark.createDataFrame(entries, ENTRY_SCHEMA),
        BOOKIES,
        None if after is None else spark.createDataFrame(after, LEDGER_SCHEMA),
    )
    return {
        (r["kind"], r["ledger_id"], r["bookie"], r["first_entry"], r["last_entry"], r["entries"])
        for r in frame.collect()
    }


def test_ranges_majorities_and_a_live_clusters_churn(spark: Any) -> None:
    # ledger 1 lost a's copies of entries 3..6; entry 3 of ledger 2 has digests 9 (a) and 7
    # (b, and c which holds it outside its write set: 3 % 3 = 0 puts it on a and b)
    entries = [r for r in replicas(1, 11) if not (r[0] == "a" and 3 <= r[2] <= 6)]
    entries += [*replicas(2, 2), ("a", 2, 3, 10, 9), ("b", 2, 3, 10, 7), ("c", 2, 3, 10, 7)]
    # ledger 5 was deleted after the metadata read (its bookies dropped it); ledger 6 was
    # created after it (its entries are on the bookies, its metadata only in the second read)
    entries += replicas(4, 5) + replicas(6, 2)
    before = [ledger(1, 11), ledger(2, 3), ledger(4, 5), ledger(5, 5)]
    after = [ledger(1, 11), ledger(2, 3), ledger(4, 5), ledger(6, 2)]
    real = {
        # a holds e%3 in {0, 2}: of 3..6 that is 3, 5, 6: one finding per run of ids
        ("missing_entries", 1, "a", 3, 3, 1),
        ("missing_entries", 1, "a", 5, 6, 2),
        ("digest_mismatch", 2, "a", 3, 3, 1),  # the odd one out of three copies
        ("extra_entries", 2, "c", 3, 3, 1),
    }
    assert findings(spark, before, entries, after) == real
    churned = findings(spark, before, entries, None) - real
    assert {f[:3] for f in churned} == {("missing_entries", 5, b) for b in BOOKIES} | {
        ("extra_entries", 6, b) for b in BOOKIES
    }
