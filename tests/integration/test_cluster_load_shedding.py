"""Load shedding with real processes (one etcd, three bookies, two brokers), driven by the
official ``pulsar-client``.

Broker A starts alone and takes every bundle of two namespaces, one producer on each bundle.
Broker B starts: the leader finds A above the average by more than the threshold and sheds one
of A's bundles per interval; the producers' clients look the bundles up again and land on B.
The test waits until B owns bundles and A no longer owns them all, and every message sent
before, during and after the moves is acknowledged.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pulsar
import pytest

from magnetar.naming import NamespaceName
from tests.kit.broker import BrokerProcess
from tests.kit.cluster import Cluster, http, one_topic_per_bundle

pytestmark = pytest.mark.etcd

CLUSTER = "standalone"
SETTINGS = {
    "MAGNETAR_BROKER_LOAD_BALANCER_REPORT_UPDATE_INTERVAL_S": "0.5",
    "MAGNETAR_BROKER_LOAD_BALANCER_SHEDDING_INTERVAL_S": "1",
    "MAGNETAR_BROKER_LOAD_BALANCER_SHEDDING_GRACE_PERIOD_S": "0",
}


@pytest.fixture(scope="module")
def storage(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    base: Path = tmp_path_factory.mktemp("shedding")
    # No broker: the test starts its two itself, one after the other.
    with Cluster(base, broker_count=0, journal_sync=False).running() as running:
        yield base, running.etcd.url


def owned(broker: BrokerProcess) -> set[str]:
    status, body = http(
        broker, "GET", f"/admin/v2/brokers/{CLUSTER}/127.0.0.1:{broker.web_port}/ownedNamespaces"
    )
    assert status == 200, body
    return set(body)


def test_an_overloaded_broker_sheds_bundles_to_a_new_one(storage: tuple[Path, str]) -> None:
    base, metadata_url = storage
    a = BrokerProcess(base / "broker-a", metadata_url, env=dict(SETTINGS))
    b = BrokerProcess(base / "broker-b", metadata_url, env=dict(SETTINGS))
    a.start()
    client = None
    try:
        namespaces = [NamespaceName("public", f"shed-{uuid.uuid4().hex[:6]}") for _ in range(2)]
        topics = []
        for ns in namespaces:
            assert http(a, "PUT", f"/admin/v2/namespaces/{ns}", {})[0] == 204
            topics += one_topic_per_bundle(ns)
        client = pulsar.Client(
            a.service_url,
            operation_timeout_seconds=30,
            logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn),
        )
        producers = [client.create_producer(t, batching_enabled=False) for t in topics]
        for p in producers:
            p.send(b"before")
        assert len(owned(a)) == len(topics)  # A alone: it owns every bundle
        b.start()
        deadline = time.monotonic() + 40
        sent = 0
        while time.monotonic() < deadline:
            for p in producers:
                p.send(f"m{sent}".encode())  # raises if a message is not acknowledged
            sent += 1
            on_b = owned(b)
            if len(on_b) >= 2 and len(owned(a)) < len(topics):
                break
            time.sleep(0.2)
        else:
            raise AssertionError(f"no bundle moved to B: A={owned(a)} B={owned(b)}")
        for p in producers:
            p.send(b"after")
        assert not owned(a) & owned(b)
    finally:
        if client is not None:
            client.close()
        b.stop()
        a.stop()
