"""Geo-replication across a broker failover: kill -9 the broker of cluster ``a`` that owns a
replicated topic while it replicates to cluster ``b``, then count.

Cluster ``a`` is real (etcd, 2 bookies, 2 brokers, short sessions); ``b`` is a standalone.
Two named producers (batched and unbatched) load the topic in ``a``; the owner is killed
mid-load; the other broker takes the bundle, loads the topic and with it the replicator, which
resumes from its cursor's mark-delete and resends what the dead broker had in flight. ``b``
deduplicates those by the origin's producer name and sequence id. Afterwards every message
acknowledged in ``a`` is stored in ``b``, and ``b`` holds each stored message of ``a`` exactly
as many times as ``a`` does (no replication duplicates, none missing).
"""

from __future__ import annotations

import collections
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fault.checker import check_holds, read_stored
from tests.fault.crash import fault_rng
from tests.fault.workload import Publisher
from tests.kit.cluster import Cluster, http, wait_for
from tests.kit.geo import cluster_name_args, link_clusters, replicated_namespace
from tests.kit.process import running
from tests.kit.standalone import StandaloneProcess, official_client

pytestmark = pytest.mark.etcd

BEFORE_KILL = 200
AFTER_KILL = 200


class _ClusterEndpoints:
    """Cluster ``a`` as the geo kit sees it: its first broker's URLs."""

    def __init__(self, cluster: Cluster) -> None:
        self.service_url = cluster.brokers[0].service_url
        self.web_url = cluster.brokers[0].web_url


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[Cluster, StandaloneProcess]]:
    env = {
        "MAGNETAR_BROKER_CLUSTER_NAME": "a",
        "MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_ENSEMBLE_SIZE": "2",
        "MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_WRITE_QUORUM": "2",
        "MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_ACK_QUORUM": "2",
    }
    cluster = Cluster(tmp_path / "a", bookie_count=2, journal_sync=False, broker_env=env)
    remote = StandaloneProcess(data_dir=tmp_path / "b", extra_args=cluster_name_args("b"))
    with cluster.running(graceful_stop=False), running(remote, clean_exit=False):
        yield cluster, remote


def _backlog_to_b(cluster: Cluster, topic: str) -> int:
    path = topic.replace("persistent://", "/admin/v2/persistent/") + "/stats"
    status, body = http(cluster.live_broker(), "GET", path)
    if status != 200 or "b" not in body["replication"]:
        return -1
    backlog: int = body["replication"]["b"]["replicationBacklog"]
    return backlog


def test_kill_9_of_the_replicating_broker_loses_and_duplicates_nothing(
    pair: tuple[Cluster, StandaloneProcess],
) -> None:
    cluster, remote = pair
    seed, rng = fault_rng()
    link_clusters({"a": _ClusterEndpoints(cluster), "b": remote})
    ns = replicated_namespace({"a": _ClusterEndpoints(cluster), "b": remote})
    topic = f"persistent://{ns}/orders-{uuid.uuid4().hex[:6]}"
    client_a = cluster.client()
    client_b = official_client(remote)
    publishers: list[Publisher] = []
    try:
        client_a.subscribe(topic, "keep").close()  # both copies hold every entry for the count
        client_b.subscribe(topic, "keep").close()
        publishers = [
            Publisher(client_a, topic, "batched", batched=True, rng=rng, rate=600),
            Publisher(client_a, topic, "unbatched", batched=False, rng=rng, rate=200),
        ]
        for publisher in publishers:
            publisher.start()
        for publisher in publishers:
            publisher.wait_acked(BEFORE_KILL, timeout_s=30)
        owner = cluster.owner_of(topic)
        owner.kill()
        counts = [p.acked_count() for p in publishers]
        for publisher, count in zip(publishers, counts, strict=True):
            publisher.wait_acked(count + AFTER_KILL, timeout_s=40)
        for publisher in publishers:
            publisher.stop()
        acked = {p.name: p.acked() for p in publishers}
        assert cluster.owner_of(topic) is not owner
        wait_for(lambda: _backlog_to_b(cluster, topic) == 0, "replication to b caught up", 40)
        stored_a = read_stored(client_a, topic, "keep")
        stored_b = read_stored(client_b, topic, "keep")
    finally:
        for publisher in publishers:
            publisher.stop()
        client_a.close()
        client_b.close()
    for name, indexes in acked.items():
        check_holds(stored_b.get(name, []), indexes, f"b/{name}", seed)
        in_a: Any = collections.Counter(stored_a.get(name, []))
        in_b: Any = collections.Counter(stored_b.get(name, []))
        assert in_b == in_a, (
            f"seed {seed}: b/{name} differs from a: {(in_b - in_a) or (in_a - in_b)}"
        )
