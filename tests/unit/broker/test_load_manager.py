"""The load manager over one in-memory metadata server: leader election, placement through the
leader, pending assignments, shedding requests and their handling by the owner's reporter."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field

import pytest

from magnetar.broker.broker_registry import BrokerLookupData, BrokerRegistry
from magnetar.broker.bundles import NamespaceBundle, NamespaceBundles
from magnetar.broker.load_manager import (
    LoadManager,
    LoadManagerConfig,
    PendingAssignments,
    Placement,
    choose_broker,
    current_leader,
)
from magnetar.broker.load_report import AnyTopic, LoadReport
from magnetar.broker.load_reporter import LoadReporter
from magnetar.broker.resource_usage import ResourceSampler
from magnetar.metadata import keys
from magnetar.metadata.memory import MemoryMetadataStore
from magnetar.naming import NamespaceName

BUNDLES = NamespaceBundles.even(NamespaceName("public", "default")).bundles
CONFIG = LoadManagerConfig(report_interval_s=0.05, shedding_enabled=False)


def data(port: int, num_bundles: int = 0) -> BrokerLookupData:
    return BrokerLookupData(
        f"127.0.0.1:{port}",
        f"pulsar://127.0.0.1:{port}",
        f"http://127.0.0.1:{port + 1000}",
        LoadReport(num_bundles=num_bundles),
    )


@dataclass
class FakeOwnership:
    bundles: list[NamespaceBundle] = field(default_factory=list)
    unloaded: list[NamespaceBundle] = field(default_factory=list)

    @property
    def owned(self) -> Sequence[NamespaceBundle]:
        return list(self.bundles)

    async def unload(self, bundle: NamespaceBundle) -> bool:
        self.bundles.remove(bundle)
        self.unloaded.append(bundle)
        return True


@dataclass
class NoTopics:
    @property
    def topics(self) -> Mapping[str, AnyTopic]:
        return {}


@dataclass
class Member:
    store: MemoryMetadataStore
    registry: BrokerRegistry
    manager: LoadManager
    ownership: FakeOwnership
    reporter: LoadReporter


async def member(name: str, port: int, config: LoadManagerConfig = CONFIG) -> Member:
    store = await MemoryMetadataStore.open(name, session_timeout_s=5.0)
    registry = BrokerRegistry(store, data(port), wait_s=0.2)
    await registry.register()
    manager = LoadManager(store, registry.data, config)
    ownership = FakeOwnership()
    # Both members share this process: a fixed CPU clock keeps the test's own CPU use (busy on
    # a loaded machine) out of the scores it compares.
    idle = ResourceSampler(cpu_seconds=lambda: 0.0)
    reporter = LoadReporter(
        store, registry, ownership, NoTopics(), interval_s=0.05, window_s=1.0, sampler=idle
    )
    return Member(store, registry, manager, ownership, reporter)


@pytest.fixture
async def pair() -> AsyncIterator[tuple[Member, Member]]:
    name = uuid.uuid4().hex
    a = await member(name, 1)
    a.manager.start()
    async with asyncio.timeout(5):
        await a.manager._election.wait_until_leader()
    b = await member(name, 2)
    b.manager.start()
    yield a, b
    for m in (a, b):
        await m.reporter.close()
        await m.manager.close()
        await m.registry.close()
        await m.store.close()


def test_choose_broker_takes_the_least_loaded_then_the_smallest_id() -> None:
    brokers = [data(3, 2), data(2, 1), data(1, 1)]
    assert choose_broker(brokers) == brokers[2]
    assert choose_broker(brokers, {"127.0.0.1:1": 1}) == brokers[1]
    assert choose_broker([]) is None


def test_pending_assignments_count_until_the_broker_reports_a_change() -> None:
    now = [0.0]
    pending = PendingAssignments(ttl_s=10.0, clock=lambda: now[0])
    pending.add(BUNDLES[0], data(1, 0))
    pending.add(BUNDLES[1], data(1, 0))
    assert pending.counts([data(1, 0)]) == {"127.0.0.1:1": 2}
    assert pending.counts([data(1, 1)]) == {}  # it acquired: its own count says it now
    pending.add(BUNDLES[2], data(1, 1))
    now[0] = 11.0
    assert pending.counts([data(1, 1)]) == {}  # expired


async def test_the_first_broker_leads_and_the_leader_key_names_it(
    pair: tuple[Member, Member],
) -> None:
    a, b = pair
    leader = await current_leader(a.store)
    assert leader is not None
    assert (leader.broker_id, leader.service_url) == ("127.0.0.1:1", "http://127.0.0.1:1001")
    assert a.manager.is_leader
    assert not b.manager.is_leader


async def test_a_non_leader_routes_placement_to_the_leader(pair: tuple[Member, Member]) -> None:
    a, b = pair
    placed = await b.manager.place(BUNDLES[0], b.registry.data, exclude_me=False)
    assert placed == Placement(a.registry.data, authoritative=False)


async def test_the_leader_spreads_a_burst_of_placements(pair: tuple[Member, Member]) -> None:
    a, _ = pair
    targets = []
    for bundle in BUNDLES:
        placed = await a.manager.place(bundle, a.registry.data, exclude_me=False)
        assert placed is not None
        assert placed.authoritative
        targets.append(placed.target.broker_id)
    assert sorted(targets) == ["127.0.0.1:1"] * 2 + ["127.0.0.1:2"] * 2


async def test_a_stopping_leader_places_elsewhere(pair: tuple[Member, Member]) -> None:
    a, _ = pair
    placed = await a.manager.place(BUNDLES[0], a.registry.data, exclude_me=True)
    assert placed is not None
    assert placed.target.broker_id == "127.0.0.1:2"


async def test_leadership_moves_when_the_leader_resigns(pair: tuple[Member, Member]) -> None:
    a, b = pair
    await a.manager.close()
    async with asyncio.timeout(5):
        await b.manager._election.wait_until_leader()
    leader = await current_leader(b.store)
    assert leader is not None
    assert leader.broker_id == "127.0.0.1:2"


async def test_the_reporter_publishes_the_owned_bundles(pair: tuple[Member, Member]) -> None:
    a, _ = pair
    a.ownership.bundles.extend(BUNDLES[:3])
    await a.reporter.report_once()
    found = await a.store.get(keys.broker_registration("127.0.0.1:1"))
    assert found is not None
    read = BrokerLookupData.from_json("127.0.0.1:1", found.value)
    assert read.num_bundles == 3
    assert list(read.load.last_stats) == sorted(str(b) for b in BUNDLES[:3])
    assert read.load.cpu.limit > 0


async def test_the_leader_sheds_and_the_owner_unloads(pair: tuple[Member, Member]) -> None:
    a, b = pair
    b.ownership.bundles.extend(BUNDLES)  # everything on the non-leader, nothing on the leader
    await b.reporter.report_once()
    await a.reporter.report_once()
    written = await a.manager.shed_once()
    assert len(written) == 1
    assert written[0][0] == "127.0.0.1:2"
    assert await a.manager.shed_once() == []  # one request per broker at a time
    assert await b.reporter.handle_unload_requests() == 1
    assert [str(x) for x in b.ownership.unloaded] == [written[0][1]]
    assert await b.store.list_keys(keys.unload_requests_prefix("127.0.0.1:2")) == []
