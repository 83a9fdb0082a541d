"""Pure aggregation of per-partition TopicStats into Pulsar's PartitionedTopicStats shape.

Numbers at the top level and inside each subscription/publisher are summed; rates and counters
add up across partitions as Pulsar does. ``publishers`` lists are concatenated; ``subscriptions``
are merged by name (their ``consumers`` lists concatenated). Non-numeric fields keep the first
partition's value, except in ``replication`` (per remote cluster), where ``connected`` holds
when every partition's replicator is connected and ``replicationDelayInSeconds`` is the largest,
as in Pulsar's ReplicatorStats. The result carries ``metadata: {"partitions": n}`` and, when asked,
``partitions: {partition name: its stats}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _merge(into: dict[str, Any], other: Mapping[str, Any]) -> None:
    for key, value in other.items():
        have = into.get(key)
        if key not in into:
            into[key] = _copy(value)
        elif isinstance(value, bool) or isinstance(have, bool):
            continue
        elif isinstance(value, int | float) and isinstance(have, int | float):
            into[key] = have + value
        elif isinstance(value, list) and isinstance(have, list):
            have.extend(_copy(value))
        elif isinstance(value, dict) and isinstance(have, dict):
            for name, sub in value.items():
                if isinstance(sub, dict) and isinstance(have.get(name), dict):
                    _merge(have[name], sub)
                elif name not in have:
                    have[name] = _copy(sub)


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def aggregate(
    per_partition: Mapping[str, Mapping[str, Any]], partitions: int, include_partitions: bool
) -> dict[str, Any]:
    total: dict[str, Any] = {}
    for stats in per_partition.values():
        _merge(total, stats)
    _replication(per_partition, total)
    total["metadata"] = {"partitions": partitions}
    if include_partitions:
        total["partitions"] = {name: _copy(s) for name, s in per_partition.items()}
    else:
        total["partitions"] = {}
    return total


def _replication(per_partition: Mapping[str, Mapping[str, Any]], total: dict[str, Any]) -> None:
    sections = total.get("replication")
    if not isinstance(sections, dict):
        return
    for cluster, section in sections.items():
        parts = [
            s["replication"][cluster]
            for s in per_partition.values()
            if isinstance(s.get("replication"), Mapping) and cluster in s["replication"]
        ]
        section["connected"] = all(bool(p.get("connected")) for p in parts)
        section["replicationDelayInSeconds"] = max(
            (p.get("replicationDelayInSeconds", 0) for p in parts), default=0
        )
