"""Faults of the cluster's shared parts: etcd restarts and a bookie restart, with two real
brokers, three real bookies, one real etcd and the official ``pulsar-client``.

(a) etcd is killed (SIGKILL) and restarted on the same data dir within the session timeout:
    the owner keeps its bundle, the producer goes on, nothing acknowledged is lost;
(b) etcd is stopped for longer than the session timeout: every member's session expires (the
    owner stops serving its bundles), and after the restart the brokers and the bookies
    register again, the topic is served again with every acknowledged message, and new
    topics (new ledgers on all three bookies, E3) work;
(c) a bookie killed with SIGKILL and restarted on its data dir registers again, and new ledgers
    are written to it.

The session timeout is longer than in the other cluster tests (etcd needs about two seconds to
come back after a SIGKILL, and (a) must fit inside the session), but every wait is for a
condition, never a fixed sleep.
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from collections.abc import Iterator

import pulsar
import pytest

from magnetar.metadata import keys
from magnetar.metadata.factory import open_store
from magnetar.naming import TopicName
from tests.kit.bookie import BookieClient, BookieProcess
from tests.kit.broker import BrokerProcess
from tests.kit.cluster import Cluster, client_on, fresh_topic, read_all, wait_for
from tests.kit.etcd import EtcdServer

pytestmark = pytest.mark.etcd

SESSION_TIMEOUT_S = 8.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    base = tmp_path_factory.mktemp("faults")
    faults = Cluster(base, session_timeout_s=SESSION_TIMEOUT_S, journal_sync=False)
    with faults.running() as running:
        yield running


def lookup(broker: BrokerProcess, topic: str) -> str | None:
    """The ``pulsar://`` URL of the topic's owner as ``broker`` answers it (None: no answer)."""
    path = f"/lookup/v2/topic/{TopicName.parse(topic).rest_path}"
    try:
        with urllib.request.urlopen(broker.web_url + path, timeout=10) as response:
            return str(json.loads(response.read())["brokerUrl"])
    except (urllib.error.URLError, OSError):
        return None


def healthy(broker: BrokerProcess) -> bool:
    try:
        with urllib.request.urlopen(broker.web_url + "/admin/v2/brokers/health", timeout=5) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


def registered(etcd: EtcdServer, prefix: str) -> set[str]:
    """The keys under ``prefix`` in etcd, read by a store client of the test's own."""

    async def read() -> set[str]:
        store = await open_store(etcd.url, session_timeout_s=SESSION_TIMEOUT_S)
        try:
            return set(await store.list_keys(prefix))
        finally:
            await store.close()

    return asyncio.run(read())


def log_mark(process: BookieProcess | BrokerProcess) -> int:
    return len(process.log_text())


def logged_since(process: BookieProcess | BrokerProcess, mark: int, event: str) -> bool:
    return event in process.log_text()[mark:]


def test_an_etcd_crash_within_the_session_timeout_loses_nothing(cluster: Cluster) -> None:
    topic = fresh_topic("fault")
    client = client_on(*cluster.brokers, operation_timeout_s=30, log_level=pulsar.LoggerLevel.Error)
    try:
        producer = client.create_producer(topic, batching_enabled=False, send_timeout_millis=60000)
        sent = [f"m{i}".encode() for i in range(60)]
        for payload in sent[:20]:
            producer.send(payload)
        owner_url = lookup(cluster.brokers[0], topic)
        owner = next(b for b in cluster.brokers if b.service_url == owner_url)
        marks = {id(m): log_mark(m) for m in cluster.members()}
        cluster.etcd.kill()
        for payload in sent[20:40]:  # the owner serves its bundle while its lease lives
            producer.send(payload)
        cluster.etcd.start()
        for payload in sent[40:]:
            producer.send(payload)
        wait_for(lambda: all(healthy(b) for b in cluster.brokers), "brokers healthy again")
        assert lookup(cluster.brokers[1], topic) == owner.service_url
        for member in cluster.members():
            assert not logged_since(member, marks[id(member)], "metadata_session_expired"), (
                f"{member.describe()} lost its session during a short etcd outage"
            )
        assert read_all(client, topic, len(sent), first_ms=30000) == sent
    finally:
        client.close()


def test_an_etcd_outage_longer_than_the_session_timeout(cluster: Cluster) -> None:
    topic = fresh_topic("fault")
    client = client_on(*cluster.brokers, operation_timeout_s=30, log_level=pulsar.LoggerLevel.Error)
    acked: list[bytes] = []
    try:
        producer = client.create_producer(topic, batching_enabled=False, send_timeout_millis=60000)
        for i in range(20):
            producer.send(f"a{i}".encode())
            acked.append(f"a{i}".encode())
        owner_url = lookup(cluster.brokers[0], topic)
        owner = next(b for b in cluster.brokers if b.service_url == owner_url)
        marks = {id(m): log_mark(m) for m in cluster.members()}
        cluster.etcd.stop()
        late: list[bytes] = []
        for i in range(20, 40):  # in flight across the outage: acked or failed, never lost
            payload = f"a{i}".encode()
            producer.send_async(payload, lambda res, _id, p=payload: late.append(p)
                                if res == pulsar.Result.Ok else None)  # fmt: skip
        for member in cluster.members():
            wait_for(
                lambda m=member: logged_since(m, marks[id(m)], "metadata_session_expired"),
                f"{member.describe()} gives up its session",
            )
        assert logged_since(owner, marks[id(owner)], "bundle_ownership_lost")
        cluster.etcd.start()
        for broker in cluster.brokers:
            wait_for(lambda b=broker: healthy(b), f"{broker.describe()} healthy again")
        wait_for(
            lambda: (
                registered(cluster.etcd, keys.BROKERS_PREFIX)
                == {keys.broker_registration(b.broker_id) for b in cluster.brokers}
            ),
            "both brokers registered again",
        )
        wait_for(
            lambda: (
                registered(cluster.etcd, keys.BOOKIE_AVAILABLE_PREFIX)
                == {keys.bookie_available(b.id) for b in cluster.bookies}
            ),
            "the three bookies registered again",
        )
        producer.flush()
        for i in range(40, 60):
            producer.send(f"a{i}".encode())
            acked.append(f"a{i}".encode())
        acked.extend(late)
        got = read_all(client, topic, len(acked), first_ms=30000)
        assert set(acked) <= set(got), sorted(set(acked) - set(got))
        fresh = client.create_producer(fresh_topic("fault"))  # a new ledger on all three bookies
        fresh.send(b"after the outage")
    finally:
        client.close()


def test_a_killed_bookie_rejoins_after_a_restart(cluster: Cluster) -> None:
    bookie = cluster.bookies[0]
    mark = log_mark(bookie)
    bookie.kill()
    bookie.start()
    assert logged_since(bookie, mark, "bookie_registered")
    before = asyncio.run(ledgers_on(bookie))
    client = client_on(*cluster.brokers, operation_timeout_s=30, log_level=pulsar.LoggerLevel.Error)
    try:
        topic = fresh_topic("fault")
        producer = client.create_producer(topic, batching_enabled=False)
        for i in range(10):
            producer.send(f"r{i}".encode())
        assert read_all(client, topic, 10, first_ms=30000) == [f"r{i}".encode() for i in range(10)]
    finally:
        client.close()
    after = asyncio.run(ledgers_on(bookie))
    assert after - before, "no new ledger was written to the restarted bookie"


async def ledgers_on(bookie: BookieProcess) -> set[int]:
    async with BookieClient(bookie.address) as client:
        return {listing.ledger_id for listing in await client.list_ledgers(include_ranges=False)}
