"""The load report's JSON (Pulsar's LocalBrokerData names), its score, the threshold shedder's
choices and the CPU sampler: pure parts, no loop."""

from __future__ import annotations

import json

from magnetar.broker.broker_registry import BrokerLookupData
from magnetar.broker.load_report import (
    BundleStats,
    LoadReport,
    ResourceUsage,
    broker_score,
)
from magnetar.broker.load_shedding import bundles_to_unload
from magnetar.broker.resource_usage import ResourceSampler


def report(bundles: dict[str, float], cpu_percent: float = 0.0) -> LoadReport:
    """A report owning ``bundles`` (full name -> msg rate in)."""
    return LoadReport.of(
        {name: BundleStats(msg_rate_in=rate, topics=1) for name, rate in bundles.items()},
        cpu=ResourceUsage(cpu_percent * 2, 200.0),
        memory=ResourceUsage(100.0, 1000.0),
        now_ms=1,
    )


def broker(name: str, load: LoadReport) -> BrokerLookupData:
    return BrokerLookupData(name, f"pulsar://{name}", f"http://web-{name}", load)


def test_the_report_uses_pulsars_field_names_and_round_trips() -> None:
    stats = {
        "public/default/0x00000000_0x40000000": BundleStats(10.0, 20.0, 1000.0, 2000.0, 1, 2, 3),
        "public/default/0x40000000_0x80000000": BundleStats(5.0, 0.0, 500.0, 0.0, 1, 0, 1),
    }
    built = LoadReport.of(
        stats, cpu=ResourceUsage(50.0, 400.0), memory=ResourceUsage(80.0, 1024.0), now_ms=7
    )
    data = built.to_json()
    assert data["numBundles"] == 2
    assert data["numTopics"] == 4
    assert (data["numProducers"], data["numConsumers"]) == (2, 2)
    assert (data["msgRateIn"], data["msgRateOut"]) == (15.0, 20.0)
    assert (data["msgThroughputIn"], data["msgThroughputOut"]) == (1500.0, 2000.0)
    assert data["cpu"] == {"usage": 50.0, "limit": 400.0}
    assert data["memory"] == {"usage": 80.0, "limit": 1024.0}
    assert data["bundles"] == sorted(stats)
    assert data["lastStats"]["public/default/0x40000000_0x80000000"]["msgRateIn"] == 5.0
    assert data["lastUpdate"] == 7
    assert LoadReport.from_json(json.loads(json.dumps(data))) == built


def test_the_registry_value_carries_the_urls_and_the_report() -> None:
    original = broker("h:6650", report({"t/n/0x00000000_0xffffffff": 3.0}))
    raw = json.loads(original.to_json())
    assert raw["pulsarServiceUrl"] == "pulsar://h:6650"
    assert raw["numBundles"] == 1
    assert BrokerLookupData.from_json("h:6650", original.to_json()) == original
    assert original.web_address == "web-h:6650"


def test_an_old_registration_without_a_report_reads_as_idle() -> None:
    raw = b'{"pulsarServiceUrl": "pulsar://h:1", "webServiceUrl": "http://h:2", "numBundles": 3}'
    read = BrokerLookupData.from_json("h:1", raw)
    assert read.num_bundles == 3
    assert read.load.cpu == ResourceUsage()


def test_the_score_weighs_bundles_traffic_and_cpu() -> None:
    assert broker_score(report({})) == 0.0
    assert broker_score(report({"a": 0.0, "b": 0.0})) == 2.0
    assert broker_score(report({"a": 2000.0})) == 3.0  # 1 bundle + 2000 msg/s
    assert broker_score(report({}, cpu_percent=50.0)) == 5.0  # 50% of the CPU limit
    assert broker_score(report({"a": 0.0}), extra_bundles=2) == 3.0


def bundles(count: int, prefix: str = "p/n/b") -> dict[str, float]:
    return {f"{prefix}{i}": 0.0 for i in range(count)}


def test_an_overloaded_broker_sheds_one_bundle_its_busiest_that_may_move() -> None:
    loaded = broker("a:1", report({"p/n/x": 0.0, "p/n/y": 500.0, "p/n/z": 100.0, **bundles(5)}))
    idle = broker("b:1", report({}))
    assert bundles_to_unload([loaded, idle], 10.0) == [("a:1", "p/n/y")]
    # The busiest was shed recently: the next busiest goes.
    assert bundles_to_unload([loaded, idle], 10.0, recently_shed={"p/n/y"}) == [("a:1", "p/n/z")]
    # A broker with a pending unload request waits.
    assert bundles_to_unload([loaded, idle], 10.0, busy={"a:1"}) == []


def test_balanced_or_nearly_balanced_brokers_shed_nothing() -> None:
    for counts in ((4, 4), (5, 4), (1, 0), (0, 0)):
        brokers = [
            broker(f"{n}:1", report(bundles(c, n))) for n, c in zip("ab", counts, strict=True)
        ]
        assert bundles_to_unload(brokers, 10.0) == [], counts
    assert bundles_to_unload([broker("a:1", report(bundles(8)))], 10.0) == []


def test_shedding_converges_without_swinging_back() -> None:
    counts = {"a:1": 8, "b:1": 0}
    for _ in range(10):
        brokers = [broker(n, report(bundles(c, n))) for n, c in sorted(counts.items())]
        moves = bundles_to_unload(brokers, 10.0)
        if not moves:
            break
        for source, _bundle in moves:
            counts[source] -= 1
            counts["b:1" if source == "a:1" else "a:1"] += 1
    assert counts == {"a:1": 4, "b:1": 4}


def test_the_threshold_is_a_percentage_above_the_average() -> None:
    a = broker("a:1", report(bundles(6, "a")))
    b = broker("b:1", report(bundles(4, "b")))
    assert bundles_to_unload([a, b], 10.0) == [("a:1", "a0")]  # 6 > 5 * 1.1
    assert bundles_to_unload([a, b], 25.0) == []  # 6 <= 5 * 1.25


def test_the_cpu_sampler_measures_cpu_time_over_wall_time() -> None:
    clock = iter([0.0, 10.0, 20.0]).__next__
    used = iter([1.0, 6.0, 6.0]).__next__
    sampler = ResourceSampler(cpu_seconds=used, clock=clock, cores=4)
    assert sampler.cpu() == ResourceUsage(50.0, 400.0)  # 5 s of CPU in 10 s
    assert sampler.cpu() == ResourceUsage(0.0, 400.0)
    memory = sampler.memory()
    assert 0 < memory.usage < memory.limit
