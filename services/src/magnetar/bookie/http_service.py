"""The bookie's HTTP endpoints (BookKeeper's ``httpServerPort``, 8000 by default).

Routes, with BookKeeper's paths and JSON shapes so that its probes and tooling work:

- ``GET /metrics`` — Prometheus text format (:mod:`magnetar.bookie.bookie_metrics`);
- ``GET /api/v1/bookie/state`` — ``{"running", "readOnly", "shuttingDown",
  "availableForHighPriorityWrites"}``; Magnetar has no high-priority writes apart from others,
  so the last is "accepts adds" (not read-only);
- ``GET /api/v1/bookie/is_ready`` — 200 ``OK`` once the bookie is registered and until it
  starts shutting down, else 503: a readiness probe. A read-only bookie is ready (it serves
  reads), as in BookKeeper.

:class:`BookieHttpService` holds the two lifecycle flags the process entry point sets
(``registered``, ``shutting_down``) and builds the route table for
:class:`~magnetar.telemetry.http_server.HttpServer`. Routes run on the event loop.
"""

from __future__ import annotations

import json

from magnetar.bookie.bookie import Bookie
from magnetar.telemetry.http_server import JSON, HttpResponse, Route
from magnetar.telemetry.metrics import CONTENT_TYPE, Metrics

METRICS_PATH = "/metrics"
STATE_PATH = "/api/v1/bookie/state"
IS_READY_PATH = "/api/v1/bookie/is_ready"


class BookieHttpService:
    def __init__(self, bookie: Bookie, metrics: Metrics) -> None:
        self._bookie = bookie
        self._metrics = metrics
        self.registered = False
        self.shutting_down = False

    @property
    def ready(self) -> bool:
        return self.registered and not self.shutting_down

    def state(self) -> dict[str, bool]:
        writable = not self._bookie.read_only
        return {
            "running": not self.shutting_down,
            "readOnly": not writable,
            "shuttingDown": self.shutting_down,
            "availableForHighPriorityWrites": writable and not self.shutting_down,
        }

    def routes(self) -> dict[str, Route]:
        async def metrics() -> HttpResponse:
            return HttpResponse(200, await self._metrics.scrape(), CONTENT_TYPE)

        async def state() -> HttpResponse:
            return HttpResponse(200, json.dumps(self.state()).encode(), JSON)

        async def is_ready() -> HttpResponse:
            if self.ready:
                return HttpResponse(200, b"OK")
            return HttpResponse(503, b"Bookie is not ready")

        return {METRICS_PATH: metrics, STATE_PATH: state, IS_READY_PATH: is_ready}
