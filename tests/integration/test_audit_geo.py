"""``magnetar audit geo`` on Spark (the session's one SparkSession) against two real
``magnetar standalone`` processes standing for clusters A and B.

Geo-replication itself is not needed: the test writes each message's "replicated" copy into
the other cluster itself, as the replicator does (MessageMetadata ``replicated_from`` = origin,
the origin's producer name and sequence id, the same payload), and withholds, duplicates or
alters chosen copies. The audit must report exactly those, and their lag.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from magnetar.audit.findings import ExitCode
from magnetar.client.client import Client
from tests.kit.geo import (
    cluster_name_args,
    link_clusters,
    replicated_namespace,
    send_copy,
    topic_stats,
)
from tests.kit.ports import free_port, wait_until
from tests.kit.process import running
from tests.kit.standalone import StandaloneProcess

# A Spark test may pay for starting the session's JVM: more than the default 120 s under load.
pytestmark = pytest.mark.timeout(300)

TOPIC = "persistent://public/default/geo-audit"
QUIET = "persistent://public/default/geo-audit-quiet"  # replicated in full both ways
LAST_GAP_MS = 50


@pytest.fixture(scope="module")
def clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    tmp = tmp_path_factory.mktemp("geo")
    with (
        running(StandaloneProcess(data_dir=tmp / "a")) as a,
        running(StandaloneProcess(data_dir=tmp / "b")) as b,
    ):
        yield {"A": a.service_url, "B": b.service_url}


async def _publish(
    url: str,
    topic: str,
    producer_name: str,
    messages: list[tuple[int, bytes]],
    origin: str | None = None,
) -> None:
    async with Client(url, operation_timeout_s=10) as client:
        name = producer_name if origin is None else f"copier-{producer_name}"
        producer = await client.create_producer(topic, producer_name=name, batching_enabled=False)
        for sequence_id, payload in messages:
            if origin is None:
                await producer.send(payload, sequence_id=sequence_id)
            else:  # as the replicator stores a copy
                await send_copy(
                    producer,
                    payload,
                    origin=origin,
                    producer_name=producer_name,
                    sequence_id=sequence_id,
                )
        await producer.close()


def _payload(origin: str, seq: int) -> bytes:
    return b"%s-%d-" % (origin.encode(), seq) * 3


async def _populate(urls: dict[str, str]) -> None:
    a_msgs = [(s, _payload("A", s)) for s in range(20)]
    b_msgs = [(s, _payload("B", s)) for s in range(10)]
    await _publish(urls["A"], TOPIC, "pa", a_msgs[:-1])
    await asyncio.sleep(LAST_GAP_MS / 1000)  # A's newest (19, withheld from B) comes this late
    await _publish(urls["A"], TOPIC, "pa", a_msgs[-1:])
    await _publish(urls["B"], TOPIC, "pb", b_msgs)
    # A's messages copied into B: 5, 6 and 19 withheld, 7 twice, 8 altered
    copies = [(s, p) for s, p in a_msgs if s not in (5, 6, 19)]
    copies.insert(8, (7, _payload("A", 7)))
    copies = [(s, b"tampered" if s == 8 else p) for s, p in copies]
    await _publish(urls["B"], TOPIC, "pa", copies, origin="A")
    # B's messages copied into A: 3 withheld
    await _publish(urls["A"], TOPIC, "pb", [m for m in b_msgs if m[0] != 3], origin="B")
    # a topic replicated in full both ways
    await _publish(urls["A"], QUIET, "qa", [(0, b"qa0"), (1, b"qa1")])
    await _publish(urls["B"], QUIET, "qa", [(0, b"qa0"), (1, b"qa1")], origin="A")


def run_geo(
    clusters: dict[str, str], spark: Any, out: Path, extra: dict[str, str] | None = None
) -> tuple[int, list[str]]:
    from magnetar.audit.geo_job import GeoAuditOptions, run_geo_audit

    lines: list[str] = []
    specs = tuple(f"{n}={u}" for n, u in {**clusters, **(extra or {})}.items())
    options = GeoAuditOptions(clusters=specs, namespace="public/default", output=out)
    return int(run_geo_audit(options, lines.append, lines.append, spark=spark)), lines


def test_the_audit_finds_exactly_what_was_withheld_duplicated_or_altered(
    clusters: dict[str, str], spark: Any, tmp_path: Path
) -> None:
    asyncio.run(_populate(clusters))
    code, lines = run_geo(clusters, spark, tmp_path / "geo")
    assert code == ExitCode.FINDINGS, lines
    found = {
        (r["kind"], r["topic"], r["cluster"], r["origin"], r["producer_name"], r["sequence_id"],
         r["copies"])
        for r in spark.read.parquet(str(tmp_path / "geo" / "findings")).collect()
    }  # fmt: skip
    assert found == {
        ("missing_message", TOPIC, "B", "A", "pa", 5, 0),
        ("missing_message", TOPIC, "B", "A", "pa", 6, 0),
        ("missing_message", TOPIC, "B", "A", "pa", 19, 0),
        ("missing_message", TOPIC, "A", "B", "pb", 3, 0),
        ("duplicated_message", TOPIC, "B", "A", "pa", 7, 2),
        ("digest_mismatch", TOPIC, "B", "A", "pa", 8, 1),
    }
    summary = json.loads((tmp_path / "geo" / "summary.json").read_text())
    lag = {(r["topic"], r["cluster"], r["origin"]): r for r in summary["lag"]}
    assert lag[(TOPIC, "B", "A")]["behind"] == 3
    assert lag[(TOPIC, "B", "A")]["lag_ms"] >= LAST_GAP_MS  # A's newest (19) is not in B
    assert lag[(TOPIC, "A", "B")]["behind"] == 1
    assert lag[(TOPIC, "A", "B")]["lag_ms"] == 0  # B's newest reached A
    assert lag[(QUIET, "B", "A")] == {**lag[(QUIET, "B", "A")], "behind": 0, "lag_ms": 0}
    assert summary["missingMessagesByCluster"] == {"A": 1, "B": 3}
    assert summary["scanned"]["messagesReadByCluster"] == {"A": 20 + 9 + 2, "B": 10 + 18 + 2}
    assert "Replication lag" in (tmp_path / "geo" / "report.html").read_text()


def test_an_unreachable_cluster_gives_exit_code_3(
    clusters: dict[str, str], spark: Any, tmp_path: Path
) -> None:
    silent = f"pulsar://127.0.0.1:{free_port()}"
    code, lines = run_geo(clusters, spark, tmp_path / "geo", {"C": silent})
    assert code == ExitCode.UNREACHABLE
    assert any("cluster C" in line and silent in line for line in lines), lines


def test_bad_cluster_options_are_refused(
    clusters: dict[str, str], spark: Any, tmp_path: Path
) -> None:
    code, lines = run_geo({"A": clusters["A"]}, spark, tmp_path / "geo")
    assert code == ExitCode.BAD_INPUT
    assert "at least twice" in lines[-1]


@pytest.fixture(scope="module")
def replicating(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, StandaloneProcess]]:
    """Two standalones named a and b, registered with each other: real geo-replication."""
    tmp = tmp_path_factory.mktemp("geo-real")
    a = StandaloneProcess(data_dir=tmp / "a", extra_args=cluster_name_args("a"))
    b = StandaloneProcess(data_dir=tmp / "b", extra_args=cluster_name_args("b"))
    with running(a), running(b):
        processes = {"a": a, "b": b}
        link_clusters(processes)
        yield processes


def test_real_replication_passes_the_audit(
    replicating: dict[str, StandaloneProcess], spark: Any, tmp_path: Path
) -> None:
    """Messages published in both clusters and copied by the brokers' replicators: once the
    replication backlogs are empty, the audit finds every message in both clusters once."""
    ns = replicated_namespace(replicating)
    topic = f"persistent://{ns}/orders"
    asyncio.run(
        _publish(replicating["a"].service_url, topic, "pa", [(s, b"a%d" % s) for s in range(30)])
    )
    asyncio.run(
        _publish(replicating["b"].service_url, topic, "pb", [(s, b"b%d" % s) for s in range(10)])
    )
    for here, there in (("a", "b"), ("b", "a")):
        wait_until(
            lambda h=here, t=there: (
                topic_stats(replicating[h], topic)["replication"][t]["replicationBacklog"] == 0
            ),
            timeout_s=30,
        )
    lines: list[str] = []
    from magnetar.audit.geo_job import GeoAuditOptions, run_geo_audit

    urls = tuple(f"{n}={p.service_url}" for n, p in replicating.items())
    out = tmp_path / "geo-real"
    options = GeoAuditOptions(clusters=urls, namespace=ns, output=out)
    code = run_geo_audit(options, lines.append, lines.append, spark=spark)
    assert code == ExitCode.PASSED, lines
    summary = json.loads((out / "summary.json").read_text())
    assert summary["missingMessagesByCluster"] == {}, summary
    assert summary["scanned"]["messagesReadByCluster"] == {"a": 40, "b": 40}  # 30 + 10 each
