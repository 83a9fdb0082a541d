"""A broker's load report: what it serves and how busy it is (Pulsar's LocalBrokerData).

Every broker of a cluster publishes one in its registry key (:mod:`.broker_registry`); the
load manager's leader reads them all to place unowned bundles and to shed load
(:mod:`.load_manager`, :mod:`.load_shedding`). The JSON keeps Pulsar's field names where they
exist: ``numBundles``, ``numTopics``, ``numProducers``, ``numConsumers``, ``msgRateIn``,
``msgRateOut``, ``msgThroughputIn``, ``msgThroughputOut``, ``cpu`` and ``memory`` as
``{"usage", "limit"}`` (CPU in percent, where one core is 100; memory in MB), ``bundles`` and
``lastStats`` (per-bundle NamespaceBundleStats) and ``lastUpdate`` (ms since the epoch).

:func:`broker_score` turns a report into one number, Magnetar's own: a bundle counts 1, every
:data:`MSG_RATE_PER_BUNDLE` messages/s (in plus out) count 1, and every
:data:`CPU_PERCENT_PER_BUNDLE` percent of the CPU limit counts 1. Idle brokers are thus
compared by their bundle counts, busy ones by their traffic and CPU as well.

Pure: no clock, no I/O. The rates come from the topics' meters (:mod:`.stats`) over the window
the caller gives; who calls: the load reporter (:mod:`.load_reporter`) on the broker's loop,
and the admin's ``broker-stats/load-report``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from magnetar.broker.bundles import NamespaceBundle, bundle_holding
from magnetar.broker.non_persistent_topic import NonPersistentTopic
from magnetar.broker.persistent_topic import PersistentTopic
from magnetar.broker.stats import total

MSG_RATE_PER_BUNDLE = 1000.0
"""Messages/s (in plus out) that weigh as much as one bundle in :func:`broker_score`."""
CPU_PERCENT_PER_BUNDLE = 10.0
"""Percent of the CPU limit that weighs as much as one bundle in :func:`broker_score`."""

AnyTopic = PersistentTopic | NonPersistentTopic


@dataclass(frozen=True, slots=True)
class ResourceUsage:
    """Pulsar's ResourceUsage: ``usage`` out of ``limit`` (0 limit: unknown)."""

    usage: float = 0.0
    limit: float = 0.0

    @property
    def percent(self) -> float:
        return 100.0 * self.usage / self.limit if self.limit > 0 else 0.0

    def to_json(self) -> dict[str, float]:
        return {"usage": self.usage, "limit": self.limit}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> ResourceUsage:
        if not data:
            return cls()
        return cls(float(data.get("usage", 0.0)), float(data.get("limit", 0.0)))


@dataclass(frozen=True, slots=True)
class BundleStats:
    """Pulsar's NamespaceBundleStats: one bundle's (or one topic's) traffic and clients."""

    msg_rate_in: float = 0.0
    msg_rate_out: float = 0.0
    msg_throughput_in: float = 0.0
    msg_throughput_out: float = 0.0
    producer_count: int = 0
    consumer_count: int = 0
    topics: int = 0

    def __add__(self, other: BundleStats) -> BundleStats:
        return BundleStats(
            self.msg_rate_in + other.msg_rate_in,
            self.msg_rate_out + other.msg_rate_out,
            self.msg_throughput_in + other.msg_throughput_in,
            self.msg_throughput_out + other.msg_throughput_out,
            self.producer_count + other.producer_count,
            self.consumer_count + other.consumer_count,
            self.topics + other.topics,
        )

    @property
    def msg_rate(self) -> float:
        return self.msg_rate_in + self.msg_rate_out

    @property
    def weight(self) -> float:
        """What moving this bundle moves, in :func:`broker_score` units."""
        return 1.0 + self.msg_rate / MSG_RATE_PER_BUNDLE

    def to_json(self) -> dict[str, Any]:
        return {
            "msgRateIn": self.msg_rate_in,
            "msgRateOut": self.msg_rate_out,
            "msgThroughputIn": self.msg_throughput_in,
            "msgThroughputOut": self.msg_throughput_out,
            "producerCount": self.producer_count,
            "consumerCount": self.consumer_count,
            "topics": self.topics,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BundleStats:
        return cls(
            float(data.get("msgRateIn", 0.0)),
            float(data.get("msgRateOut", 0.0)),
            float(data.get("msgThroughputIn", 0.0)),
            float(data.get("msgThroughputOut", 0.0)),
            int(data.get("producerCount", 0)),
            int(data.get("consumerCount", 0)),
            int(data.get("topics", 0)),
        )


def topic_load(topic: AnyTopic, window_s: float) -> BundleStats:
    """One loaded topic's share of its bundle's stats (rates over ``window_s``)."""
    rate_in = total(p.rate_in.rate(window_s) for p in topic.producers.values())
    rate_out = total(
        c.rate_out.rate(window_s) for s in topic.subscriptions.values() for c in s.consumers
    )
    return BundleStats(
        msg_rate_in=rate_in.messages,
        msg_rate_out=rate_out.messages,
        msg_throughput_in=rate_in.bytes,
        msg_throughput_out=rate_out.bytes,
        producer_count=len(topic.producers),
        consumer_count=sum(len(s.consumers) for s in topic.subscriptions.values()),
        topics=1,
    )


def bundle_stats(topics: Iterable[AnyTopic], window_s: float) -> BundleStats:
    return sum((topic_load(t, window_s) for t in topics), BundleStats())


def stats_by_bundle(
    bundles: Sequence[NamespaceBundle], topics: Iterable[AnyTopic], window_s: float
) -> dict[NamespaceBundle, BundleStats]:
    """Each of ``bundles``' stats over the ``topics`` it holds (zeros for one holding none)."""
    members: dict[NamespaceBundle, list[AnyTopic]] = {b: [] for b in bundles}
    for topic in topics:
        bundle = bundle_holding(bundles, topic.name)
        if bundle is not None:
            members[bundle].append(topic)
    return {b: bundle_stats(ts, window_s) for b, ts in members.items()}


@dataclass(frozen=True, slots=True)
class LoadReport:
    """One broker's load (Pulsar's LocalBrokerData, the fields Magnetar fills): ``totals`` sums
    its bundles' stats (``numTopics``, ``numProducers``, ``msgRateIn``, ... in the JSON)."""

    num_bundles: int = 0
    totals: BundleStats = BundleStats()
    cpu: ResourceUsage = ResourceUsage()
    memory: ResourceUsage = ResourceUsage()
    last_stats: Mapping[str, BundleStats] = field(default_factory=dict)
    last_update_ms: int = 0

    @classmethod
    def of(
        cls,
        per_bundle: Mapping[str, BundleStats],
        *,
        cpu: ResourceUsage,
        memory: ResourceUsage,
        now_ms: int,
    ) -> LoadReport:
        """The report of a broker owning exactly the bundles of ``per_bundle`` (by full name)."""
        return cls(
            num_bundles=len(per_bundle),
            totals=sum(per_bundle.values(), BundleStats()),
            cpu=cpu,
            memory=memory,
            last_stats=dict(sorted(per_bundle.items())),
            last_update_ms=now_ms,
        )

    def with_num_bundles(self, num_bundles: int) -> LoadReport:
        return replace(self, num_bundles=num_bundles)

    def to_json(self) -> dict[str, Any]:
        t = self.totals
        return {
            "numBundles": self.num_bundles,
            "numTopics": t.topics,
            "numProducers": t.producer_count,
            "numConsumers": t.consumer_count,
            "msgRateIn": t.msg_rate_in,
            "msgRateOut": t.msg_rate_out,
            "msgThroughputIn": t.msg_throughput_in,
            "msgThroughputOut": t.msg_throughput_out,
            "cpu": self.cpu.to_json(),
            "memory": self.memory.to_json(),
            "bundles": list(self.last_stats),
            "lastStats": {name: s.to_json() for name, s in self.last_stats.items()},
            "lastUpdate": self.last_update_ms,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LoadReport:
        stats = data.get("lastStats") or {}
        return cls(
            num_bundles=int(data.get("numBundles", 0)),
            totals=BundleStats(
                float(data.get("msgRateIn", 0.0)),
                float(data.get("msgRateOut", 0.0)),
                float(data.get("msgThroughputIn", 0.0)),
                float(data.get("msgThroughputOut", 0.0)),
                int(data.get("numProducers", 0)),
                int(data.get("numConsumers", 0)),
                int(data.get("numTopics", 0)),
            ),
            cpu=ResourceUsage.from_json(data.get("cpu")),
            memory=ResourceUsage.from_json(data.get("memory")),
            last_stats={str(k): BundleStats.from_json(v) for k, v in stats.items()},
            last_update_ms=int(data.get("lastUpdate", 0)),
        )


def broker_score(report: LoadReport, extra_bundles: int = 0) -> float:
    """One number per broker, lower is less loaded (the weights in the module docstring)."""
    return (
        report.num_bundles
        + extra_bundles
        + report.totals.msg_rate / MSG_RATE_PER_BUNDLE
        + report.cpu.percent / CPU_PERCENT_PER_BUNDLE
    )
