"""Bundle ownership and lookup across two real brokers (one etcd, three bookies), driven by the
official ``pulsar-client``.

(a) a client pointed at the broker that does NOT own a topic ends up producing and consuming
    on the owner (binary LOOKUP answers Connect to the owner; HTTP lookup says the same), and
    an admin topic call to the non-owner is redirected (307) to the owner;
(b) a producer survives an admin unload of its bundle with no acknowledged message lost;
(c) split brain: the owner is frozen (SIGSTOP) past its lease, the other broker takes the
    bundle, the frozen one is resumed: every message acknowledged to either client is readable
    once from the new owner, and the old owner reports it lost the bundle;
(d) SIGTERM on the owner hands its bundles over: the producer goes on on the other broker.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import httpx
import pulsar
import pytest

from magnetar.broker.bundles import NamespaceBundles
from magnetar.naming import NamespaceName, TopicName
from tests.kit.broker import BrokerProcess
from tests.kit.cluster import Cluster, client_on, fresh_topic, http, read_all

pytestmark = pytest.mark.etcd

NS = NamespaceName("public", "default")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[BrokerProcess]]:
    # Stopped with SIGTERM at the end, a broker a test froze (SIGSTOP) resumed first.
    with Cluster(tmp_path_factory.mktemp("cluster"), journal_sync=False).running() as running:
        yield running.brokers


def make_owner(broker: BrokerProcess, topic: str, cluster: list[BrokerProcess]) -> None:
    """Make ``broker`` own ``topic``'s bundle: unload it from another owner, then look it up
    authoritatively on ``broker`` (which then acquires it itself)."""
    name = TopicName.parse(topic)
    bundle = NamespaceBundles.even(NS).find(name)
    path = f"/lookup/v2/topic/{name.rest_path}?authoritative=true"
    for _ in range(3):
        status, body = http(broker, "GET", path)
        assert status == 200, body
        if body["brokerUrl"] == broker.service_url:
            return
        owner = next(b for b in cluster if b.service_url == body["brokerUrl"])
        unload = f"/admin/v2/namespaces/public/default/{bundle.name}/unload"
        assert http(owner, "PUT", unload)[0] == 204
    raise AssertionError(f"{broker.describe()} could not take {bundle}")


def test_namespace_bundles_and_registry(cluster: list[BrokerProcess]) -> None:
    status, body = http(cluster[0], "GET", "/admin/v2/namespaces/public/default/bundles")
    assert status == 200
    assert body == NamespaceBundles.even(NS).to_json()


def test_client_on_the_non_owner_ends_up_on_the_owner(cluster: list[BrokerProcess]) -> None:
    owner, other = cluster
    topic = fresh_topic("own")
    make_owner(owner, topic, cluster)
    path = TopicName.parse(topic).rest_path
    status, body = http(other, "GET", f"/lookup/v2/topic/{path}")
    assert (status, body["brokerUrl"]) == (200, owner.service_url)
    client = client_on(other)
    try:
        producer = client.create_producer(topic)
        consumer = client.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
        for i in range(10):
            producer.send(f"m{i}".encode())
        got = [consumer.receive(timeout_millis=10000).data() for _ in range(10)]
        assert got == [f"m{i}".encode() for i in range(10)]
        status, stats = http(owner, "GET", f"/admin/v2/{path}/stats")
        assert status == 200
        assert len(stats["publishers"]) == 1
        # The non-owner sends admin topic calls to the owner, path and query kept (Pulsar's 307).
        stats_path = f"/admin/v2/{path}/stats?getPreciseBacklog=false"
        redirect = httpx.get(other.web_url + stats_path, timeout=10)
        assert redirect.status_code == 307
        assert redirect.headers["location"] == owner.web_url + stats_path
        status, stats = http(other, "GET", stats_path)  # urllib follows it
        assert status == 200
        assert len(stats["publishers"]) == 1
    finally:
        client.close()


def test_producer_survives_an_unload_of_its_bundle(cluster: list[BrokerProcess]) -> None:
    owner, other = cluster
    topic = fresh_topic("own")
    make_owner(owner, topic, cluster)
    bundle = NamespaceBundles.even(NS).find(TopicName.parse(topic))
    client = client_on(other, owner)
    try:
        producer = client.create_producer(topic)
        for i in range(20):
            producer.send(f"m{i}".encode())
        status, body = http(
            owner, "PUT", f"/admin/v2/namespaces/public/default/{bundle.name}/unload"
        )
        assert status == 204, body
        for i in range(20, 40):
            producer.send(f"m{i}".encode())
        got = read_all(client, topic, 40)
        assert got == [f"m{i}".encode() for i in range(40)]
    finally:
        client.close()


def test_a_frozen_owner_loses_the_bundle_and_never_writes_again(
    cluster: list[BrokerProcess],
) -> None:
    owner, other = cluster
    topic = fresh_topic("own")
    make_owner(owner, topic, cluster)
    path = TopicName.parse(topic).rest_path
    first = client_on(owner, other)
    second = client_on(other)
    acked: list[bytes] = []
    try:
        producer = first.create_producer(topic, send_timeout_millis=60000)
        for i in range(10):
            producer.send(f"a{i}".encode())
            acked.append(f"a{i}".encode())
        owner.pause()
        try:
            # Sent while the owner hangs: they reach it only after SIGCONT, or go elsewhere.
            frozen_sends: list[bytes] = []
            for i in range(10, 20):
                payload = f"a{i}".encode()
                producer.send_async(payload, lambda res, _id, p=payload: frozen_sends.append(p)
                                    if res == pulsar.Result.Ok else None)  # fmt: skip
            deadline = time.monotonic() + 30
            while True:  # the owner key expires with the frozen broker's lease
                status, body = http(other, "GET", f"/lookup/v2/topic/{path}")
                if status == 200 and body["brokerUrl"] == other.service_url:
                    break
                assert time.monotonic() < deadline, f"ownership never moved: {status} {body}"
                time.sleep(0.2)
            taker = second.create_producer(topic)
            for i in range(10):
                taker.send(f"b{i}".encode())
                acked.append(f"b{i}".encode())
        finally:
            owner.resume()
        producer.flush()
        for i in range(20, 30):
            producer.send(f"a{i}".encode())
            acked.append(f"a{i}".encode())
        acked.extend(frozen_sends)
        got = read_all(second, topic, len(acked))
        # "Never writes again", as a client can observe it: an append the woken owner made
        # outside the new owner's ledger chain would be acknowledged yet missing here, and one
        # made to the fenced ledger would be refused, so every acknowledged message shows up
        # through the new owner exactly once.
        assert set(acked) <= set(got), sorted(set(acked) - set(got))
        assert len(got) == len(set(got)), "a message was stored twice"
        deadline = time.monotonic() + 10
        while "bundle_ownership_lost" not in owner.log_text(since_start=True):
            assert time.monotonic() < deadline, "the frozen owner never gave up its bundle"
            time.sleep(0.1)
    finally:
        first.close()
        second.close()


def sigterm_handover(owner: BrokerProcess, other: BrokerProcess, run: int) -> tuple[float, float]:
    """SIGTERM the owner of a fresh topic while one producer sends back to back; return the
    seconds from the signal to the first acknowledgement from the new owner (a message id on
    another ledger), and the longest pause between two acknowledgements. Nothing acknowledged
    may be lost, nothing stored twice."""
    topic = fresh_topic("own")
    make_owner(owner, topic, cluster=[owner, other])
    client = client_on(owner, other)
    try:
        producer = client.create_producer(topic, send_timeout_millis=30000)
        for i in range(20):
            ledger = producer.send(f"m{i}".encode()).ledger_id()
        acked_at: list[float] = []
        stopping = threading.Thread(target=lambda: codes.append(owner.stop()))
        codes: list[int | None] = []
        signalled = time.monotonic()
        stopping.start()
        first_after: float | None = None
        i = 20
        while stopping.is_alive() or first_after is None:
            moved = producer.send(f"m{i}".encode()).ledger_id() != ledger
            acked_at.append(time.monotonic())
            if first_after is None and moved:
                first_after = acked_at[-1] - signalled
            i += 1
        stopping.join()
        assert codes == [0], owner.log_text(since_start=True)[-3000:]
        got = read_all(client, topic, i)
        # Exactly once: the owner answers the publishes in flight before CLOSE_PRODUCER, so
        # none is resent to the new owner (see cluster.md).
        assert got == [f"m{n}".encode() for n in range(i)]
        path = TopicName.parse(topic).rest_path
        status, body = http(other, "GET", f"/lookup/v2/topic/{path}")
        assert (status, body["brokerUrl"]) == (200, other.service_url)
    finally:
        client.close()
        owner.start()
    assert first_after is not None
    stall = max(b - a for a, b in zip([signalled, *acked_at], acked_at, strict=False))
    print(
        f"\nsigterm handover run {run}: first publish on the new owner {first_after:.3f} s, "
        f"longest publish pause {stall:.3f} s, {i} messages, none lost or stored twice"
    )
    return first_after, stall


def test_sigterm_hands_bundles_over(cluster: list[BrokerProcess]) -> None:
    """Issue 12 point 6: the owner unloads its bundles on SIGTERM, the producer goes on on the
    other broker with nothing lost. The timings are printed (``-s``) for docs/benchmarks.md,
    not asserted: they depend on the machine's load."""
    owner, other = cluster
    figures = [sigterm_handover(owner, other, run) for run in range(1, 4)]
    firsts = sorted(f for f, _ in figures)
    print(f"sigterm handover, first publish on the new owner (s): {[round(f, 3) for f in firsts]}")


def test_a_second_broker_with_the_same_address_is_refused(cluster: list[BrokerProcess]) -> None:
    twin = BrokerProcess(
        cluster[0].data_dir.parent / "twin",
        cluster[0].metadata_url,
        broker_port=cluster[0].broker_port,
    )
    twin.spawn()
    code = twin.wait_exit(timeout=60)
    assert code != 0
    assert "already registered" in twin.log_text(since_start=True)
