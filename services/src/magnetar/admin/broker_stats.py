"""``GET /admin/v2/broker-stats/topics`` and ``/broker-stats/metrics``: this broker's topic stats.

- ``topics``: Pulsar's nested map ``{namespace: {bundle: {domain: {topic: stats}}}}`` of the
  topics loaded here, where ``bundle`` is the range name (``0x00000000_0x40000000``), ``domain``
  is ``persistent`` or ``non-persistent`` and ``stats`` is the TopicStats JSON of
  ``topics stats`` (:func:`magnetar.broker.topic_admin.topic_stats`). A loaded topic outside
  every bundle this broker serves (its bundle is being released) is left out.
- ``metrics``: Pulsar's list of Metrics ``{"metrics": {...}, "dimensions": {...}}``, one per
  namespace with loaded topics, dimension ``namespace``, and the subset of Pulsar's namespace
  metrics this broker keeps: ``brk_in_rate``, ``brk_in_tp_rate``, ``brk_out_rate``,
  ``brk_out_tp_rate`` (over the broker's stats window), ``brk_storage_size``,
  ``brk_msg_backlog``, ``brk_no_of_producers``, ``brk_no_of_subscriptions``,
  ``brk_no_of_consumers`` — the counters ``/metrics`` reads (:mod:`magnetar.broker.topic_metrics`).

The builders are pure functions of the loaded topics; the router reads them through the
:class:`~magnetar.broker.broker_directory.BrokerDirectory`. Concurrency: request handlers on the
broker's loop, which owns the topics they read.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from fastapi import APIRouter

from magnetar.broker.broker_directory import BrokerDirectory
from magnetar.broker.bundles import NamespaceBundle, bundle_holding
from magnetar.broker.topic_admin import topic_stats
from magnetar.broker.topic_metrics import AnyTopic, backlog, storage_size


def topics_by_bundle(
    topics: Iterable[AnyTopic], bundles: Sequence[NamespaceBundle], window_s: float
) -> dict[str, Any]:
    """Pulsar's ``broker-stats/topics`` map (module docstring)."""
    tree: dict[str, Any] = {}
    for topic in sorted(topics, key=lambda t: str(t.name)):
        bundle = bundle_holding(bundles, topic.name)
        if bundle is None:
            continue
        by_domain = tree.setdefault(str(bundle.namespace), {}).setdefault(bundle.name, {})
        by_domain.setdefault(topic.name.domain, {})[str(topic.name)] = topic_stats(topic, window_s)
    return tree


def namespace_metrics(topics: Iterable[AnyTopic], window_s: float) -> list[dict[str, Any]]:
    """Pulsar's ``broker-stats/metrics`` list, one Metrics per namespace (module docstring)."""
    by_namespace: dict[str, dict[str, float]] = {}
    for topic in topics:
        stats = topic_stats(topic, window_s)
        m = by_namespace.setdefault(str(topic.name.namespace), dict.fromkeys(METRIC_NAMES, 0.0))
        m["brk_in_rate"] += stats["msgRateIn"]
        m["brk_in_tp_rate"] += stats["msgThroughputIn"]
        m["brk_out_rate"] += stats["msgRateOut"]
        m["brk_out_tp_rate"] += stats["msgThroughputOut"]
        m["brk_storage_size"] += storage_size(topic)
        m["brk_msg_backlog"] += backlog(topic)
        m["brk_no_of_producers"] += len(topic.producers)
        m["brk_no_of_subscriptions"] += len(topic.subscriptions)
        m["brk_no_of_consumers"] += sum(len(s.consumers) for s in topic.subscriptions.values())
    return [
        {"metrics": metrics, "dimensions": {"namespace": namespace}}
        for namespace, metrics in sorted(by_namespace.items())
    ]


METRIC_NAMES = (
    "brk_in_rate",
    "brk_in_tp_rate",
    "brk_out_rate",
    "brk_out_tp_rate",
    "brk_storage_size",
    "brk_msg_backlog",
    "brk_no_of_producers",
    "brk_no_of_subscriptions",
    "brk_no_of_consumers",
)


def router(directory: BrokerDirectory) -> APIRouter:
    api = APIRouter(prefix="/admin/v2/broker-stats", tags=["brokers"])

    @api.get("/topics", summary="Stats of the topics this broker serves, by namespace and bundle")
    async def topics() -> dict[str, Any]:
        loaded = list(directory.loaded_topics.topics.values())
        return topics_by_bundle(loaded, directory.owned_bundles(), directory.stats_window_s)

    @api.get("/metrics", summary="This broker's namespace metrics")
    async def metrics() -> list[dict[str, Any]]:
        loaded = list(directory.loaded_topics.topics.values())
        return namespace_metrics(loaded, directory.stats_window_s)

    return api
