"""The load manager across two real brokers (one etcd, three bookies): Pulsar's brokers REST
resources, a leader that places bundles on both brokers, and leadership moving on a kill -9.

(a) ``/admin/v2/brokers/{cluster}`` lists both brokers' web addresses on either broker,
    ``leaderBroker`` names the same leader on both, ``health`` is ``ok``, and the CLI says so;
(b) HTTP lookups of every bundle of several new namespaces, all sent to ONE broker, end up
    spread over both brokers (each owns bundles; ``ownedNamespaces`` says which), with a load
    report that counts them;
(c) kill -9 of the leader: the other broker leads once the leader's lease expires.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator

import pytest

from magnetar.broker.bundles import NamespaceBundles
from magnetar.naming import NamespaceName, TopicName
from tests.kit.broker import BrokerProcess
from tests.kit.cluster import Cluster, http, topics_in, wait_for
from tests.kit.process import MAGNETAR_CLI

pytestmark = pytest.mark.etcd

CLUSTER = "standalone"  # the brokers' default cluster_name
SETTINGS = {
    "MAGNETAR_BROKER_LOAD_BALANCER_REPORT_UPDATE_INTERVAL_S": "0.5",
    "MAGNETAR_BROKER_LOAD_BALANCER_SHEDDING_ENABLED": "false",
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[BrokerProcess]]:
    base = tmp_path_factory.mktemp("load-manager")
    with Cluster(base, journal_sync=False, broker_env=SETTINGS).running() as running:
        yield running.brokers


def web_address(broker: BrokerProcess) -> str:
    return f"127.0.0.1:{broker.web_port}"


def leader_of(broker: BrokerProcess) -> str | None:
    status, body = http(broker, "GET", "/admin/v2/brokers/leaderBroker")
    return body["serviceUrl"] if status == 200 else None


def test_brokers_list_leader_and_health(cluster: list[BrokerProcess]) -> None:
    expected = sorted(web_address(b) for b in cluster)
    for broker in cluster:
        assert http(broker, "GET", f"/admin/v2/brokers/{CLUSTER}") == (200, expected)
        assert http(broker, "GET", "/admin/v2/brokers/health") == (200, "ok")
    wait_for(lambda: leader_of(cluster[0]) is not None, "a leader", 10)
    leader = leader_of(cluster[0])
    assert leader in {b.web_url for b in cluster}
    assert leader_of(cluster[1]) == leader
    assert http(cluster[0], "GET", "/admin/v2/brokers/other-cluster")[0] == 404
    result = subprocess.run(
        [*MAGNETAR_CLI, "admin", "--admin-url", cluster[1].web_url, "brokers", "list", CLUSTER],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (result.returncode, result.stdout.split()) == (0, expected), result.stderr


def owned(broker: BrokerProcess, via: BrokerProcess) -> set[str]:
    path = f"/admin/v2/brokers/{CLUSTER}/{web_address(broker)}/ownedNamespaces"
    status, body = http(via, "GET", path)  # the other broker redirects (307) to the owner
    assert status == 200, body
    return set(body)


def test_lookups_sent_to_one_broker_spread_bundles_over_both(
    cluster: list[BrokerProcess],
) -> None:
    entry = cluster[0]
    wanted: set[str] = set()
    for _ in range(3):
        ns = NamespaceName("public", f"spread-{uuid.uuid4().hex[:6]}")
        assert http(entry, "PUT", f"/admin/v2/namespaces/{ns}", {})[0] == 204
        for bundle in NamespaceBundles.even(ns).bundles:
            topic = TopicName.parse(topics_in(ns, bundle.range.lower, bundle.range.upper)[0])
            status, body = http(entry, "GET", f"/lookup/v2/topic/{topic.rest_path}")
            assert status == 200, body
            wanted.add(str(bundle))
    first, second = owned(cluster[0], cluster[1]), owned(cluster[1], cluster[0])
    assert wanted <= first | second
    assert not first & second
    assert len(wanted & first) >= 4, (first, second)
    assert len(wanted & second) >= 4, (first, second)
    status, report = http(cluster[1], "GET", "/admin/v2/broker-stats/load-report")
    assert status == 200
    assert report["numBundles"] == len(second)
    assert set(report["bundles"]) == second
    assert report["cpu"]["limit"] > 0
    assert report["pulsarServiceUrl"] == cluster[1].service_url


def test_a_killed_leader_hands_leadership_over(cluster: list[BrokerProcess]) -> None:
    wait_for(lambda: leader_of(cluster[0]) is not None, "a leader", 10)
    leader = next(b for b in cluster if b.web_url == leader_of(cluster[0]))
    survivor = next(b for b in cluster if b is not leader)
    leader.kill()
    wait_for(lambda: leader_of(survivor) == survivor.web_url, "the survivor to lead", 20)
    assert http(survivor, "GET", f"/admin/v2/brokers/{CLUSTER}") == (
        200,
        [web_address(survivor)],
    )
