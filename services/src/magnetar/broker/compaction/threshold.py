"""Automatic compaction: Pulsar's compaction threshold, checked on a timer.

Every ``brokerServiceCompactionMonitorIntervalInSeconds`` each loaded persistent topic is
looked at: when the bytes after its compaction horizon (the whole topic before the first run)
exceed the effective threshold — the namespace policy ``compactionThreshold``, else the broker's
``brokerServiceCompactionThresholdInBytes`` — and no run is under way, a compaction starts. 0
turns it off. Magnetar has no topic-level policies, so there is no per-topic override.

Concurrency: one task on the broker's loop (a :class:`~magnetar.broker.topic_sweep.TopicSweep`);
it only triggers runs, which go on in each topic's compaction task.
"""

from __future__ import annotations

from magnetar.broker.persistent_topic import PersistentTopic
from magnetar.broker.policy_defaults import effective_compaction_threshold
from magnetar.broker.topic_sweep import DefaultsSweep
from magnetar.policies import Policies
from magnetar.telemetry import get_logger

log = get_logger(__name__)


def should_compact(backlog_bytes: int, threshold_bytes: int, running: bool) -> bool:
    """Pulsar's check: a threshold is set, the backlog exceeds it and no run is under way."""
    return threshold_bytes > 0 and backlog_bytes > threshold_bytes and not running


class CompactionMonitor(DefaultsSweep):
    """Starts a compaction of each topic whose backlog after the horizon passes the threshold."""

    name = "compaction-monitor"

    @property
    def interval_s(self) -> float:
        return self._defaults.compaction_monitor_interval_s

    async def check_topic(self, topic: PersistentTopic, policies: Policies) -> None:
        compaction = topic.compaction
        threshold = effective_compaction_threshold(policies, self._defaults)
        backlog = compaction.backlog_bytes()
        if should_compact(backlog, threshold, compaction.running) and compaction.trigger():
            log.info("compaction_triggered", topic=str(topic.name), backlog_bytes=backlog,
                     threshold_bytes=threshold)  # fmt: skip
