"""The broker's Prometheus metrics: per-topic counters and levels, read at scrape time.

:func:`observe_topics` registers one observable instrument per broker metric of
:mod:`magnetar.telemetry.metric_names` (Pulsar's names and labels: ``cluster``, ``namespace``,
``topic``; replication metrics add ``remote_cluster``). Each callback walks the loaded topics
and reads the counters the broker already keeps for the admin's stats — a topic's
``messages_in``/``bytes_in``, its consumers' ``messages_out``/``bytes_out`` plus what departed
consumers sent (``out_of_removed``), the managed ledger's ledger sizes, the subscriptions'
backlogs, the replicators' backlogs — so publishing and dispatching do no extra work for
metrics.

Counters are "since the topic was loaded on this broker" (as Pulsar's): a topic unloaded and
loaded again starts from zero, which Prometheus's ``rate()`` reads as a counter reset.

Who calls it: the process wiring (the command line's admin app factory), once per broker, on
the event loop; the callbacks run on the loop too, when ``/metrics`` is scraped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from magnetar.broker.non_persistent_topic import NonPersistentTopic
from magnetar.broker.persistent_topic import PersistentTopic
from magnetar.broker.replication import Replicator
from magnetar.telemetry import metric_names as names
from magnetar.telemetry.metric_names import MetricSpec
from magnetar.telemetry.metrics import Metrics, Sample

AnyTopic = PersistentTopic | NonPersistentTopic


class LoadedTopics(Protocol):
    @property
    def topics(self) -> Mapping[str, AnyTopic]:
        """The topics loaded on this broker, by full name (read only)."""
        ...


def messages_out(topic: AnyTopic) -> int:
    return sum(
        sub.out_of_removed.messages + sum(c.messages_out for c in sub.consumers)
        for sub in topic.subscriptions.values()
    )


def bytes_out(topic: AnyTopic) -> int:
    return sum(
        sub.out_of_removed.bytes + sum(c.bytes_out for c in sub.consumers)
        for sub in topic.subscriptions.values()
    )


def storage_size(topic: AnyTopic) -> int:
    if isinstance(topic, PersistentTopic):
        return topic.storage_size
    return 0


def backlog(topic: AnyTopic) -> int:
    if isinstance(topic, PersistentTopic):
        return sum(sub.backlog for sub in topic.subscriptions.values())
    return 0


TopicValue = Callable[[AnyTopic], float]

TOPIC_VALUES: tuple[tuple[MetricSpec, TopicValue], ...] = (
    (names.PULSAR_IN_MESSAGES, lambda t: t.messages_in),
    (names.PULSAR_IN_BYTES, lambda t: t.bytes_in),
    (names.PULSAR_OUT_MESSAGES, messages_out),
    (names.PULSAR_OUT_BYTES, bytes_out),
    (names.PULSAR_PRODUCERS, lambda t: len(t.producers)),
    (names.PULSAR_CONSUMERS, lambda t: sum(len(s.consumers) for s in t.subscriptions.values())),
    (names.PULSAR_SUBSCRIPTIONS, lambda t: len(t.subscriptions)),
    (names.PULSAR_STORAGE_SIZE, storage_size),
    (names.PULSAR_MSG_BACKLOG, backlog),
)


def topic_labels(cluster: str, topic: AnyTopic) -> dict[str, str]:
    return {"cluster": cluster, "namespace": str(topic.name.namespace), "topic": str(topic.name)}


def observe_topics(metrics: Metrics, broker: LoadedTopics, cluster: str) -> None:
    """Export the broker metrics of ``broker``'s loaded topics on ``metrics``."""

    def collector(value: TopicValue) -> Callable[[], Iterable[Sample]]:
        def collect() -> list[Sample]:
            return [
                Sample(value(topic), topic_labels(cluster, topic))
                for topic in list(broker.topics.values())
            ]

        return collect

    for spec, value in TOPIC_VALUES:
        metrics.observe(spec, collector(value))
    metrics.observe(names.PULSAR_TOPICS, lambda: [Sample(len(broker.topics), {"cluster": cluster})])
    for spec, read in REPLICATOR_VALUES:
        metrics.observe(spec, replicator_collector(broker, cluster, read))


ReplicatorValue = Callable[[Replicator], float]

REPLICATOR_VALUES: tuple[tuple[MetricSpec, ReplicatorValue], ...] = (
    (names.PULSAR_REPLICATION_BACKLOG, lambda r: r.backlog),
    (names.PULSAR_REPLICATION_CONNECTED, lambda r: 1 if r.connected else 0),
    (names.PULSAR_REPLICATION_DELAY, lambda r: r.delay_s()),
)


def replicator_collector(
    broker: LoadedTopics, cluster: str, read: ReplicatorValue
) -> Callable[[], Iterable[Sample]]:
    """Samples of one replication metric: one per loaded topic and remote cluster."""

    def collect() -> list[Sample]:
        samples = []
        for topic in list(broker.topics.values()):
            if not isinstance(topic, PersistentTopic) or topic.replication is None:
                continue
            labels = topic_labels(cluster, topic)
            for remote, replicator in list(topic.replication.replicators.items()):
                samples.append(Sample(read(replicator), {**labels, "remote_cluster": remote}))
        return samples

    return collect
