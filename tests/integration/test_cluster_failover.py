"""Broker failover under load: kill -9 the broker that owns a topic (etcd, 3 bookies, 2 brokers,
the official client with a service URL listing both brokers).

Three producers load one topic: batched, unbatched, and unbatched with deduplication (the
namespace has it on; the producer has a name). A Shared and a Failover subscription consume it.
The owner gets SIGKILL mid-load. Its lease runs out (``session_timeout_s``, 2 s here), the other
broker takes the bundle on the client's next lookup, recovers the managed ledger (fencing the
old ledger on the bookies) and opens a new one. The client reconnects on its own. Afterwards
(tests/fault/checker.py): every message acknowledged to a producer is consumed at least once
by both subscriptions, first occurrences in order per producer; the deduplicated producer's
messages are stored exactly once. The time from the kill to the first receipt from the new
owner's ledger is printed (docs/cluster.md, "Failover").
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pulsar
import pytest

from tests.fault.checker import Subscriber, check_holds, check_in_order, check_once, read_stored
from tests.fault.crash import fault_rng
from tests.fault.workload import Publisher
from tests.kit.cluster import SESSION_TIMEOUT_S, Cluster, dedup_namespace

pytestmark = pytest.mark.etcd

BEFORE_KILL = 300  # acknowledged sends per producer before the kill
AFTER_KILL = 300  # and after it, counted from the kill


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    # The bookies are not killed here: their fsyncs would only slow the machine down.
    with Cluster(tmp_path / "cluster", journal_sync=False).running(graceful_stop=False) as running:
        yield running


def test_kill_9_of_the_owner_loses_no_acknowledged_message(cluster: Cluster) -> None:
    seed, rng = fault_rng()
    ns = dedup_namespace(cluster.brokers[0], f"failover-{uuid.uuid4().hex[:6]}")
    topic = f"persistent://{ns}/orders"
    client = cluster.client()
    publishers: list[Publisher] = []
    subscribers: list[Subscriber] = []
    try:
        client.subscribe(topic, "keep").close()  # holds every entry for the final read
        subscribers = [
            Subscriber(client, topic, "shared", pulsar.ConsumerType.Shared),
            Subscriber(client, topic, "failover", pulsar.ConsumerType.Failover),
        ]
        publishers = [
            Publisher(client, topic, "batched", batched=True, rng=rng, rate=800),
            Publisher(client, topic, "unbatched", batched=False, rng=rng, rate=200),
            Publisher(client, topic, "dedup", batched=False, rng=rng, rate=200),
        ]
        for publisher in publishers:
            publisher.start()
        for publisher in publishers:
            publisher.wait_acked(BEFORE_KILL, timeout_s=30)
        owner = cluster.owner_of(topic)
        old_ledgers = set().union(*(p.ledgers() for p in publishers))
        killed_at = time.monotonic()
        owner.kill()
        counts = [p.acked_count() for p in publishers]
        for publisher, count in zip(publishers, counts, strict=True):
            publisher.wait_acked(count + AFTER_KILL, timeout_s=40)
        firsts = [p.first_receipt_on_new_ledger(old_ledgers) for p in publishers]
        for publisher in publishers:
            publisher.stop()
        acked = {p.name: p.acked() for p in publishers}
        for subscriber in subscribers:
            subscriber.wait_for(acked, timeout_s=30, seed=seed)
        survivor = cluster.owner_of(topic)
        assert survivor is not owner
        stored = read_stored(client, topic, "keep")
    finally:
        for subscriber in subscribers:
            subscriber.stop()
        client.close()

    assert all(first is not None for first in firsts), firsts
    failover_s = min(f for f in firsts if f is not None) - killed_at
    print(
        f"failover: kill -9 -> first publish on the new owner {failover_s:.2f} s "
        f"(session_timeout_s={SESSION_TIMEOUT_S}); "
        f"acknowledged {sum(len(a) for a in acked.values())}, "
        f"failed sends {sum(p.failed() for p in publishers)}"
    )
    for subscriber in subscribers:
        for name, got in subscriber.seen().items():
            check_in_order(got, f"{subscriber.subscription}/{name}", seed)
    for name, indexes in acked.items():
        check_holds(stored.get(name, []), indexes, f"stored/{name}", seed)
        check_in_order(stored.get(name, []), f"stored/{name}", seed)
    check_once(stored["dedup"], "stored/dedup", seed)
