"""The proxy's metrics: its :class:`~.stats.ProxyStats` counters, observed at scrape time.

:func:`observe_proxy` registers one callback per metric of
:data:`magnetar.telemetry.metric_names.PROXY_METRICS` on the process's
:class:`~magnetar.telemetry.metrics.Metrics`; the relay pays nothing per chunk beyond the
integer add it already does. Called once by the process entry point, on the proxy's loop.
"""

from __future__ import annotations

from magnetar.proxy.stats import ProxyStats
from magnetar.telemetry import metric_names as names
from magnetar.telemetry.metrics import Metrics, Sample


def observe_proxy(metrics: Metrics, stats: ProxyStats) -> None:
    def one(value: float) -> list[Sample]:
        return [Sample(value)]

    metrics.observe(names.PROXY_ACTIVE_CONNECTIONS, lambda: one(stats.active_connections))
    metrics.observe(names.PROXY_NEW_CONNECTIONS, lambda: one(stats.new_connections))
    metrics.observe(names.PROXY_REJECTED_CONNECTIONS, lambda: one(stats.rejected_connections))
    metrics.observe(names.PROXY_ACTIVE_RELAYS, lambda: one(stats.active_relays))
    metrics.observe(
        names.PROXY_BINARY_BYTES,
        lambda: [
            Sample(stats.bytes_from_clients, {"direction": "client_to_broker"}),
            Sample(stats.bytes_to_clients, {"direction": "broker_to_client"}),
        ],
    )
    metrics.observe(
        names.PROXY_LOOKUPS,
        lambda: [
            Sample(stats.lookups_served, {"result": "connect"}),
            Sample(stats.lookups_failed, {"result": "failed"}),
        ],
    )
    metrics.observe(names.PROXY_DROPPED_SLOW, lambda: one(stats.dropped_slow))
