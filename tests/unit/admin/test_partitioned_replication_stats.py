"""A partitioned topic's ``replication`` stats: sums, except connected (all) and delay (max)."""

from __future__ import annotations

from typing import Any

from magnetar.admin.partitioned_stats import aggregate


def _partition(backlog: int, connected: bool, delay: int) -> dict[str, Any]:
    return {
        "msgRateIn": 1.0,
        "replication": {
            "b": {
                "msgRateOut": 2.0,
                "replicationBacklog": backlog,
                "connected": connected,
                "replicationDelayInSeconds": delay,
            }
        },
    }


def test_replication_sections_are_summed_per_cluster_with_all_connected_and_max_delay() -> None:
    total = aggregate(
        {"t-partition-0": _partition(3, True, 7), "t-partition-1": _partition(4, False, 2)},
        2,
        include_partitions=False,
    )
    b = total["replication"]["b"]
    assert b["replicationBacklog"] == 7
    assert b["msgRateOut"] == 4.0
    assert b["connected"] is False
    assert b["replicationDelayInSeconds"] == 7


def test_all_partitions_connected_is_connected() -> None:
    total = aggregate({"p0": _partition(0, True, 0), "p1": _partition(0, True, 0)}, 2, False)
    assert total["replication"]["b"]["connected"] is True
