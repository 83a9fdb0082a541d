"""The audit's pure parts: planning, rows, the unreachable marker, verdicts and reports."""

from __future__ import annotations

import itertools
import json

import pytest

from magnetar.audit.errors import BadAuditInput, Unreachable, find_unreachable
from magnetar.audit.findings import ExitCode, KindCount, Summary
from magnetar.audit.report import bar_chart, html_report, summary_json, terminal_table
from magnetar.audit.scans import bucket_plan, check_metadata_url, ledger_row, split_ledger_range
from magnetar.ids import BookieId, EntryId
from magnetar.ledger.metadata import LedgerMetadataView, LedgerState
from magnetar.metadata import keys


@pytest.mark.parametrize(
    ("max_id", "partitions", "free", "buckets"),
    [(0, 16, 0, 1), (15, 16, 0, 16), (16, 16, 1, 2), (1200, 16, 2, 13), (10**6, 64, 5, 11)],
)
def test_buckets_cover_every_id_with_at_most_the_partitions_asked(
    max_id: int, partitions: int, free: int, buckets: int
) -> None:
    got_free, got = bucket_plan(max_id, partitions)
    assert (got_free, len(got)) == (free, buckets)
    prefixes = [keys.ledger_meta_bucket(b, got_free) for b in got]
    for ledger_id in {0, max_id // 2, max_id}:
        key = keys.ledger_meta(ledger_id)  # type: ignore[arg-type]
        assert sum(key.startswith(p) for p in prefixes) == 1, (ledger_id, prefixes)


def test_ledger_ranges_split_a_bookie_and_the_last_is_open() -> None:
    assert split_ledger_range(100, 2) == [(0, 50), (51, 0)]
    assert split_ledger_range(0, 4) == [(0, 0)]
    ranges = split_ledger_range(1000, 3)
    assert ranges[0][0] == 0
    assert ranges[-1][1] == 0
    assert all(a[1] + 1 == b[0] for a, b in itertools.pairwise(ranges))


def test_a_ledger_row_gives_each_segment_its_last_entry() -> None:
    a, b, c, d = (BookieId(x) for x in "abcd")
    view = LedgerMetadataView(
        ensemble_size=3,
        write_quorum=2,
        ack_quorum=2,
        ensembles=((EntryId(0), (a, b, c)), (EntryId(10), (a, d, c))),
        state=LedgerState.CLOSED,
        last_entry_id=EntryId(19),
        custom={"k": b"v"},
    )
    row = ledger_row(7, view)
    assert row[:2] == (7, "CLOSED")
    assert row[8] == [(0, 9, ["a", "b", "c"]), (10, 19, ["a", "d", "c"])]
    assert row[9] == {"k": "v"}
    opened = ledger_row(7, LedgerMetadataView(3, 2, 2, ((EntryId(0), (a, b, c)),)))
    assert opened[8] == [(0, None, ["a", "b", "c"])]  # an open ledger's tail can still grow


def test_only_etcd_urls_are_audited() -> None:
    check_metadata_url("etcd://127.0.0.1:2379,127.0.0.1:2380")
    with pytest.raises(BadAuditInput, match="standalone"):
        check_metadata_url("rocksdb:///data/metadata")
    with pytest.raises(BadAuditInput, match="not host:port"):
        check_metadata_url("etcd://nowhere")


def test_an_unreachable_peer_survives_a_trip_through_a_spark_failure() -> None:
    error = Unreachable("bookie", "bookie-1", "127.0.0.1:3181", "UNAVAILABLE: refused")
    text = f"Py4JJavaError: ... PythonException: Traceback ...\n{error}\n\tat org.apache..."
    found = find_unreachable(text)
    assert found is not None
    assert (found.what, found.name, found.address) == ("bookie", "bookie-1", "127.0.0.1:3181")
    assert "UNAVAILABLE: refused" in found.describe()
    assert find_unreachable("some other failure") is None


def test_the_verdict_follows_the_findings() -> None:
    clean = Summary("ledgers", "etcd://x:1", 1.0, {})
    assert (clean.exit_code, clean.verdict) == (ExitCode.PASSED, "pass")
    failed = Summary(
        "ledgers",
        "etcd://x:1",
        2.5,
        {"missing_entries": KindCount(2, 7)},
        {"ledgers": 3},
        {"bookie-1": 7},
        ({"kind": "missing_entries", "ledger_id": 4, "bookie": "bookie-1<"},),
    )
    assert (failed.exit_code, failed.verdict) == (ExitCode.FINDINGS, "fail")
    data = json.loads(summary_json(failed))
    assert data["exitCode"] == 1
    assert data["findings"] == {"missing_entries": {"findings": 2, "entries": 7}}
    table = terminal_table(failed, ["kind", "ledger_id", "bookie"])
    assert "FAIL" in table
    assert "missing_entries  2         7" in table
    page = html_report(failed, ["kind", "ledger_id", "bookie"], [("per bookie", {"b": 7.0}, "")])
    assert "<svg" in page
    assert "bookie-1&lt;" in page  # escaped
    assert "<script" not in page  # self-contained, static
    assert "none" in bar_chart("empty", {}, "")


def test_the_bridge_pulls_one_item_at_a_time_and_closes_the_source() -> None:
    from collections.abc import AsyncIterator

    from magnetar.audit.bridge import iterate

    produced: list[int] = []
    closed: list[bool] = []

    async def source() -> AsyncIterator[int]:
        try:
            for i in range(100):
                produced.append(i)
                yield i
        finally:
            closed.append(True)

    items = iterate(source)
    assert [next(items), next(items)] == [0, 1]
    assert produced == [0, 1]  # nothing read ahead of the consumer
    items.close()  # the reader stopped early (e.g. Spark's limit)
    assert closed == [True]
    assert list(iterate(source)) == list(range(100))


def test_the_audit_image_speaks_sparks_container_contract() -> None:
    from pathlib import Path

    from magnetar.audit.container import EXECUTOR_BACKEND, ContainerError, container_command

    home = Path("/spark")
    driver = container_command(
        ["driver", "--properties-file", "/opt/spark/conf/spark.properties", "app.py", "x"],
        {"SPARK_DRIVER_BIND_ADDRESS": "10.0.0.7"},
        home,
        "java",
    )
    assert driver[0] == "/spark/bin/spark-submit"
    assert "spark.driver.bindAddress=10.0.0.7" in driver
    assert driver[driver.index("--deploy-mode") + 1] == "client"
    assert driver[-4:] == ["--properties-file", "/opt/spark/conf/spark.properties", "app.py", "x"]
    env = {
        "SPARK_DRIVER_URL": "spark://CoarseGrainedScheduler@driver:7078",
        "SPARK_EXECUTOR_ID": "3",
        "SPARK_EXECUTOR_CORES": "1",
        "SPARK_APPLICATION_ID": "spark-app",
        "SPARK_EXECUTOR_POD_IP": "10.0.0.9",
        "SPARK_RESOURCE_PROFILE_ID": "0",
        "SPARK_EXECUTOR_POD_NAME": "audit-exec-3",
        "SPARK_EXECUTOR_MEMORY": "2g",
        "SPARK_JAVA_OPT_10": "-Dlast",
        "SPARK_JAVA_OPT_2": "-Dsecond",
        "SPARK_JAVA_OPT_0": "-Dfirst",
    }
    executor = container_command(["executor"], env, home, "/usr/bin/java")
    assert executor[:6] == ["/usr/bin/java", "-Dfirst", "-Dsecond", "-Dlast", "-Xms2g", "-Xmx2g"]
    assert executor[executor.index("-cp") + 1] == "/spark/jars/*"
    assert EXECUTOR_BACKEND in executor
    assert executor[executor.index("--executor-id") + 1] == "3"
    assert executor[executor.index("--hostname") + 1] == "10.0.0.9"
    assert container_command(["audit", "ledgers"], {}, home, "java") == [
        "magnetar", "audit", "ledgers",
    ]  # fmt: skip
    with pytest.raises(ContainerError, match="SPARK_DRIVER_URL"):
        container_command(["executor"], {}, home, "java")
    with pytest.raises(ContainerError, match="SPARK_DRIVER_BIND_ADDRESS"):
        container_command(["driver"], {}, home, "java")
