"""Pure aggregation of per-partition TopicStats into Pulsar's PartitionedTopicStats shape.

Numbers at the top level and inside each subscription/publisher are summed; rates and counters
add up across partitions as Pulsar does. ``publishers`` lists are concatenated; ``subscriptions``
are merged by name (their ``consumers`` lists concatenated). Non-numeric fields keep the first
partition's value. The result carries ``metadata: {"partitions": n}`` and, when asked,
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
    total["metadata"] = {"partitions": partitions}
    if include_partitions:
        total["partitions"] = {name: _copy(s) for name, s in per_partition.items()}
    else:
        total["partitions"] = {}
    return total
