"""The one adapter through which the OpenTelemetry SDK and prometheus_client enter.

A process builds one :class:`Metrics` in its entry point and hands it to the collectors of the
services it runs (the broker's topic metrics, the bookie's metrics); ``GET /metrics`` returns
:meth:`Metrics.scrape`, Prometheus's text format.

How the hot paths stay cheap: counters and gauges are OpenTelemetry *observable* instruments.
A collector registers a callback (:meth:`Metrics.observe`) that reads the counters the service
already keeps and returns :class:`Sample` values; callbacks run only when someone scrapes, so a
message costs nothing extra. Histograms (:meth:`Metrics.histogram`) are recorded as things
happen and belong on paths that run per group or per batch, not per message; their
``record`` may be called from any thread (the SDK locks).

Invariants: every instrument comes from a :class:`~magnetar.telemetry.metric_names.MetricSpec`
(names are declared in that one module); the exported name is the spec's name exactly (no unit
or ``_total`` rewriting: specs carry no OpenTelemetry unit, and counter names already end in
``_total``); no ``target_info`` or scope labels are added. Each :class:`Metrics` has its own
prometheus_client registry, so several in one test process never see each other's series.

Concurrency: :meth:`Metrics.scrape` runs the callbacks in the calling thread; callers on the
event loop (the HTTP endpoints) call it there, so callbacks may read loop-owned state freely.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from magnetar.telemetry.metric_names import Kind, MetricSpec

CONTENT_TYPE = CONTENT_TYPE_LATEST
"""The ``Content-Type`` of Prometheus's text exposition format."""


@dataclass(frozen=True, slots=True)
class Sample:
    """One value of a metric, with its labels (as the spec names them)."""

    value: float
    labels: Mapping[str, str] = field(default_factory=dict)


Collect = Callable[[], Iterable[Sample]]
"""Reads the current values of one metric; called at scrape time, on the scraping thread."""

Refresh = Callable[[], Awaitable[None]]
"""Updates values a collector must measure off the event loop (disk sizes), before a scrape."""


class LatencyRecorder(Protocol):
    def record(self, amount: float) -> None: ...


class Metrics:
    """One process's metrics: instruments from specs, rendered for Prometheus."""

    def __init__(self) -> None:
        self._registry = CollectorRegistry(auto_describe=False)
        self._reader = PrometheusMetricReader(
            disable_target_info=True, scope_info_enabled=False, registry=self._registry
        )
        self._provider = MeterProvider(metric_readers=[self._reader])
        self._meter = self._provider.get_meter("magnetar")
        self._names: set[str] = set()
        self._refreshers: list[Refresh] = []

    def _claim(self, spec: MetricSpec) -> None:
        if spec.name in self._names:
            raise ValueError(f"metric {spec.name} is already registered")
        self._names.add(spec.name)

    def observe(self, spec: MetricSpec, collect: Collect) -> None:
        """Export ``spec`` (a counter or gauge) with the samples ``collect`` returns."""
        if spec.kind is Kind.HISTOGRAM:
            raise ValueError(f"{spec.name} is a histogram: record it with histogram()")
        self._claim(spec)

        def callback(options: CallbackOptions) -> Iterable[Observation]:
            return [Observation(s.value, dict(s.labels)) for s in collect()]

        if spec.kind is Kind.COUNTER:
            self._meter.create_observable_counter(
                spec.name, [callback], description=spec.description
            )
        else:
            self._meter.create_observable_gauge(spec.name, [callback], description=spec.description)

    def histogram(self, spec: MetricSpec) -> LatencyRecorder:
        """A recorder for ``spec`` (a histogram, in its own buckets)."""
        if spec.kind is not Kind.HISTOGRAM:
            raise ValueError(f"{spec.name} is not a histogram")
        self._claim(spec)
        return self._meter.create_histogram(
            spec.name,
            description=spec.description,
            explicit_bucket_boundaries_advisory=list(spec.buckets),
        )

    def add_refresh(self, refresh: Refresh) -> None:
        """Await ``refresh`` before each scrape (in registration order)."""
        self._refreshers.append(refresh)

    async def scrape(self) -> bytes:
        """Refresh, then render every metric in Prometheus's text format."""
        for refresh in self._refreshers:
            await refresh()
        return self.render()

    def render(self) -> bytes:
        """Every metric in Prometheus's text format, from the callbacks' current samples."""
        return generate_latest(self._registry)

    def shutdown(self) -> None:
        self._provider.shutdown()
