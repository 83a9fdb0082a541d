"""Which bundles to split automatically: a pure decision over per-bundle load.

Pulsar's bundle split condition, with its broker.conf settings and defaults
(:class:`BundleSplitConfig`): a bundle is split when it has more topics than
``load_balancer_namespace_bundle_max_topics`` (1000), more sessions (producers + consumers) than
``..._max_sessions`` (1000), a higher message rate (in + out, msg/s) than ``..._max_msg_rate``
(30000), or a higher bandwidth (in + out) than ``..._max_bandwidth_mbytes`` (100 MB/s). A
threshold of 0 or less is off, as in Pulsar.

Invariants of :func:`bundles_to_split`:

- nothing is chosen when ``load_balancer_auto_bundle_split_enabled`` is false;
- a bundle with fewer than two topics is never chosen (splitting it moves no load);
- a bundle of one hash value (that cannot be cut) is never chosen;
- a namespace never grows past ``load_balancer_namespace_maximum_bundles`` (128): counting the
  splits chosen in the same pass, the busiest bundles (by how far over a threshold) go first.

Pure values and functions, no clock, no I/O: tested without a loop. Caller: the bundle
splitter (:mod:`.bundle_splitter`), which measures the owned bundles and splits what is chosen.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from magnetar.broker.bundles import NamespaceBundle
from magnetar.naming import NamespaceName

MEGABYTE = 1024 * 1024


@dataclass(frozen=True, slots=True)
class BundleSplitConfig:
    """The automatic split's settings (names after Pulsar's broker.conf)."""

    enabled: bool = True  # loadBalancerAutoBundleSplitEnabled
    interval_s: float = 60.0  # loadBalancerSplitIntervalMinutes, in seconds
    max_topics: int = 1000  # loadBalancerNamespaceBundleMaxTopics
    max_sessions: int = 1000  # loadBalancerNamespaceBundleMaxSessions
    max_msg_rate: float = 30_000.0  # loadBalancerNamespaceBundleMaxMsgRate (in + out, msg/s)
    max_bandwidth_mbytes: float = 100.0  # loadBalancerNamespaceBundleMaxBandwidthMbytes
    maximum_bundles: int = 128  # loadBalancerNamespaceMaximumBundles
    algorithm: str = "range_equally_divide"  # defaultNamespaceBundleSplitAlgorithm


@dataclass(frozen=True, slots=True)
class BundleStats:
    """The measured load of one owned bundle (its loaded topics)."""

    bundle: NamespaceBundle
    topics: int = 0
    sessions: int = 0  # producers + consumers
    msg_rate: float = 0.0  # messages/s, in + out
    throughput: float = 0.0  # bytes/s, in + out


def overload(stats: BundleStats, config: BundleSplitConfig) -> float:
    """How far the bundle is over its worst threshold (> 1.0: over; 0.0 when all are off)."""
    ratios = [
        stats.topics / config.max_topics if config.max_topics > 0 else 0.0,
        stats.sessions / config.max_sessions if config.max_sessions > 0 else 0.0,
        stats.msg_rate / config.max_msg_rate if config.max_msg_rate > 0 else 0.0,
        stats.throughput / (config.max_bandwidth_mbytes * MEGABYTE)
        if config.max_bandwidth_mbytes > 0
        else 0.0,
    ]
    return max(ratios)


def bundles_to_split(
    stats: Iterable[BundleStats],
    bundle_counts: Mapping[NamespaceName, int],
    config: BundleSplitConfig,
) -> list[NamespaceBundle]:
    """The bundles to split now, busiest first (see the module docstring).

    ``bundle_counts`` holds each namespace's current number of bundles; a namespace missing
    from it counts as already at the maximum (nothing of it is split)."""
    if not config.enabled:
        return []
    over = [
        (overload(s, config), s.bundle)
        for s in stats
        if s.topics >= 2 and s.bundle.range.splittable and overload(s, config) > 1.0
    ]
    over.sort(key=lambda item: (-item[0], str(item[1])))
    counts = dict(bundle_counts)
    chosen: list[NamespaceBundle] = []
    for _, bundle in over:
        count = counts.get(bundle.namespace, config.maximum_bundles)
        if count >= config.maximum_bundles:
            continue
        counts[bundle.namespace] = count + 1
        chosen.append(bundle)
    return chosen
