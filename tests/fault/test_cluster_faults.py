"""Fault test: brokers and bookies of a real cluster killed with SIGKILL and restarted at random
while producers and consumers run.

Cluster (:class:`tests.kit.cluster.Cluster`): etcd, 3 bookies, 2 brokers, 2 s session timeouts,
journals fsynced. Managed ledgers are E2 Wq2 Aq2: with three bookies one may be down and an
ensemble change still finds a replacement (with E3 on three bookies there is none, and a write
waits for the ensemble-change timeout). Workload (:mod:`tests.fault.workload`): on a topic of a
namespace with deduplication and on one without, a batched and an unbatched producer each,
sending steadily; a Shared subscription consumes each topic. Fault injector (seeded; the seed
is printed, ``MAGNETAR_FAULT_SEED`` repeats a run): each round kills a random broker, a random
bookie or one of each (so at least one broker and two bookies stay up), waits until every
producer has more acknowledged sends, restarts the victims, and waits again.
``MAGNETAR_FAULT_ROUNDS`` (default 3) sets the number of rounds for longer local runs. The test
runs twice: with a client that lists both brokers, and with one that knows only a
``magnetar proxy`` in front of them (the proxy itself is not killed).
Checker (:mod:`tests.fault.checker`, DESIGN §4): every acknowledged message is consumed at least
once and is stored, first occurrences in order per producer; with deduplication, once.
Autorecovery runs throughout (it recovers a killed broker's ledgers and re-replicates a killed
bookie's, racing the brokers' own recoveries): once faults stop, no ledger may stay marked
under-replicated or name a bookie that is not registered.
"""

from __future__ import annotations

import asyncio
import os
import random
import uuid
from collections.abc import Iterator
from pathlib import Path

import pulsar
import pytest

from magnetar.ledger.metadata import LedgerMetadataView
from magnetar.metadata import keys
from magnetar.metadata.factory import open_store
from tests.fault.checker import Subscriber, check_holds, check_in_order, check_once, read_stored
from tests.fault.crash import fault_rng
from tests.fault.workload import Publisher
from tests.kit.cluster import Cluster, dedup_namespace, wait_for
from tests.kit.process import ServerProcess

pytestmark = pytest.mark.etcd

ROUNDS = int(os.environ.get("MAGNETAR_FAULT_ROUNDS", "3"))
MORE_ACKED = (50, 200)  # acknowledged sends per producer to wait for after each step
STEP_TIMEOUT_S = 45.0


@pytest.fixture(params=["brokers", "proxy"])
def cluster(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Cluster]:
    e2 = Cluster(
        tmp_path / "cluster",
        proxy=request.param == "proxy",
        broker_env={
            "MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_ENSEMBLE_SIZE": "2",
            "MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_WRITE_QUORUM": "2",
            "MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_ACK_QUORUM": "2",
        },
        autorecovery_count=1,
    )
    # Killed at the end: a clean stop is another test's business; this one must be quick.
    with e2.running(graceful_stop=False) as running:
        yield running


@pytest.mark.timeout(120 + 60 * ROUNDS)
def test_random_broker_and_bookie_kills_lose_no_acknowledged_message(cluster: Cluster) -> None:
    seed, rng = fault_rng()
    dedup_ns = dedup_namespace(cluster.brokers[0], f"faults-{uuid.uuid4().hex[:6]}")
    topics = {
        "dedup": f"persistent://{dedup_ns}/t",
        "plain": f"persistent://public/default/faults-{uuid.uuid4().hex[:6]}",
    }
    client = cluster.proxy_client() if cluster.proxy else cluster.client()
    publishers: dict[str, list[Publisher]] = {}
    subscribers: dict[str, Subscriber] = {}
    try:
        for kind, topic in topics.items():
            client.subscribe(topic, "keep").close()  # holds every entry for the final read
            subscribers[kind] = Subscriber(client, topic, "shared", pulsar.ConsumerType.Shared)
            publishers[kind] = [
                Publisher(client, topic, f"{kind}-b", batched=True, rng=rng, rate=400),
                Publisher(client, topic, f"{kind}-u", batched=False, rng=rng, rate=100),
            ]
        everyone = [p for ps in publishers.values() for p in ps]
        for publisher in everyone:
            publisher.start()
        wait_for_more(everyone, rng)
        for round_ in range(ROUNDS):
            victims = pick_victims(cluster, rng)
            print(f"round {round_}: kill -9 {', '.join(v.describe() for v in victims)}")
            for victim in victims:
                victim.kill()
            wait_for_more(everyone, rng)
            for victim in victims:
                victim.start()
            wait_for_more(everyone, rng)
        for publisher in everyone:
            publisher.stop()
        acked = {kind: {p.name: p.acked() for p in ps} for kind, ps in publishers.items()}
        for kind, subscriber in subscribers.items():
            subscriber.wait_for(acked[kind], timeout_s=STEP_TIMEOUT_S, seed=seed)
        stored = {kind: read_stored(client, topic, "keep") for kind, topic in topics.items()}
    finally:
        for subscriber in subscribers.values():
            subscriber.stop()
        client.close()

    print(f"acknowledged {sum(len(a) for by in acked.values() for a in by.values())} messages")
    for kind, by_name in acked.items():
        consumed = subscribers[kind].seen()
        for name, indexes in by_name.items():
            check_holds(consumed.get(name, []), indexes, f"consumed/{name}", seed)
            check_in_order(consumed.get(name, []), f"consumed/{name}", seed)
            check_holds(stored[kind].get(name, []), indexes, f"stored/{name}", seed)
            check_in_order(stored[kind].get(name, []), f"stored/{name}", seed)
            if kind == "dedup":
                check_once(stored[kind].get(name, []), f"stored/{name}", seed)
    wait_for(
        lambda: fully_replicated(cluster),
        f"no ledger under-replicated once faults stopped (seed {seed})",
        STEP_TIMEOUT_S,
    )


def fully_replicated(cluster: Cluster) -> bool:
    """No autorecovery mark is left and every ledger names registered bookies only."""

    async def check() -> bool:
        store = await open_store(cluster.etcd.url)
        try:
            if await store.list_keys(keys.UNDER_REPLICATED_PREFIX):
                return False
            available = {keys.bookie_id_of(k) for k in await store.list_keys(
                keys.BOOKIE_AVAILABLE_PREFIX)}  # fmt: skip
            ledgers = await store.list(keys.LEDGER_META_PREFIX)
        finally:
            await store.close()
        named = {b for _, v in ledgers for b in LedgerMetadataView.decode(v.value).all_bookies()}
        return named <= available

    return asyncio.run(check())


def pick_victims(cluster: Cluster, rng: random.Random) -> list[ServerProcess]:
    """A broker, a bookie, or one of each: never more than one of a kind at once."""
    what = rng.choice(("broker", "bookie", "both"))
    victims: list[ServerProcess] = []
    if what in ("broker", "both"):
        victims.append(rng.choice(cluster.brokers))
    if what in ("bookie", "both"):
        victims.append(rng.choice(cluster.bookies))
    return victims


def wait_for_more(publishers: list[Publisher], rng: random.Random) -> None:
    """Until every producer has a seeded number more acknowledged sends."""
    more = rng.randint(*MORE_ACKED)
    targets = [(p, p.acked_count() + more) for p in publishers]
    for publisher, target in targets:
        publisher.wait_acked(target, timeout_s=STEP_TIMEOUT_S)
