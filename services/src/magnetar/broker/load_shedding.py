"""Which bundles the load manager's leader unloads: Pulsar's threshold shedder idea.

Given every live broker's load report, :func:`bundles_to_unload` names at most one bundle per
overloaded broker:

- a broker is **overloaded** when its :func:`~.load_report.broker_score` exceeds the average
  score of all live brokers by more than ``threshold_percentage`` percent of that average
  (``load_balancer_broker_threshold_shedder_percentage``, Pulsar's default 10);
- it gives up its busiest bundle (most messages/s in plus out; ties by name) among those that
  may move: not shed within the grace period (``recently_shed``), and light enough that the
  broker stays at least as loaded as the least loaded broker would be after taking it
  (``score - least >= 2 * weight``), so that moves never swing load back and forth;
- a broker with one bundle (or none) keeps it, and a broker in ``busy`` (an unload request of
  its own still pending) is left for the next round.

Pure: no clock, no I/O. Who calls: the leader's shedding task (:mod:`.load_manager`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from magnetar.broker.broker_registry import BrokerLookupData
from magnetar.broker.load_report import broker_score


def bundles_to_unload(
    brokers: Sequence[BrokerLookupData],
    threshold_percentage: float,
    recently_shed: Collection[str] = (),
    busy: Collection[str] = (),
) -> list[tuple[str, str]]:
    """``(broker id, bundle full name)`` pairs to unload now, by broker id."""
    if len(brokers) < 2:
        return []
    scores = {b.broker_id: broker_score(b.load) for b in brokers}
    average = sum(scores.values()) / len(scores)
    least = min(scores.values())
    limit = average * (1.0 + threshold_percentage / 100.0)
    chosen = []
    for broker in sorted(brokers, key=lambda b: b.broker_id):
        score = scores[broker.broker_id]
        if broker.broker_id in busy or score <= limit or broker.num_bundles < 2:
            continue
        movable = [
            (name, stats)
            for name, stats in broker.load.last_stats.items()
            if name not in recently_shed and score - least >= 2 * stats.weight
        ]
        if movable:
            name, _ = min(movable, key=lambda m: (-m[1].msg_rate, m[0]))
            chosen.append((broker.broker_id, name))
    return chosen
