"""The autorecovery process's HTTP endpoints (``http_server_port``, 8000 by default).

- ``GET /metrics``: Prometheus text (:mod:`magnetar.autorecovery.metrics`);
- ``GET /api/v1/autorecovery/is_ready``: 200 ``OK`` while running (a readiness and liveness
  probe), 503 once it shuts down;
- ``GET /api/v1/autorecovery/state``: ``{"running", "auditor", "isAuditor",
  "fragmentsInProgress"}``;
- ``GET /api/v1/autorecovery/who_is_auditor``: ``{"Auditor": id}`` (BookKeeper's path and
  key), the elected auditor's id, or 404 while there is none.

Routes run on the event loop, served by :class:`~magnetar.telemetry.http_server.HttpServer`.
"""

from __future__ import annotations

import json

from magnetar.autorecovery.auditor import AUDITOR_ELECTION, Auditor
from magnetar.autorecovery.replicator import ReplicationStats
from magnetar.metadata import MetadataStore, current_leader
from magnetar.telemetry.http_server import JSON, HttpResponse, Route
from magnetar.telemetry.metrics import CONTENT_TYPE, Metrics

METRICS_PATH = "/metrics"
IS_READY_PATH = "/api/v1/autorecovery/is_ready"
STATE_PATH = "/api/v1/autorecovery/state"
WHO_IS_AUDITOR_PATH = "/api/v1/autorecovery/who_is_auditor"


class AutorecoveryHttpService:
    def __init__(
        self, store: MetadataStore, auditor: Auditor, stats: ReplicationStats, metrics: Metrics
    ) -> None:
        self._store = store
        self._auditor = auditor
        self._stats = stats
        self._metrics = metrics
        self.running = False

    def routes(self) -> dict[str, Route]:
        async def metrics() -> HttpResponse:
            return HttpResponse(200, await self._metrics.scrape(), CONTENT_TYPE)

        async def is_ready() -> HttpResponse:
            if self.running:
                return HttpResponse(200, b"OK")
            return HttpResponse(503, b"Autorecovery is not running")

        async def state() -> HttpResponse:
            body = {
                "running": self.running,
                "auditor": self._auditor.auditor_id,
                "isAuditor": self._auditor.is_leader,
                "fragmentsInProgress": self._stats.fragments_in_progress,
            }
            return HttpResponse(200, json.dumps(body).encode(), JSON)

        async def who_is_auditor() -> HttpResponse:
            leader = await current_leader(self._store, AUDITOR_ELECTION)
            if leader is None:
                return HttpResponse(404, b"No auditor is elected")
            return HttpResponse(200, json.dumps({"Auditor": leader.decode()}).encode(), JSON)

        return {
            METRICS_PATH: metrics,
            IS_READY_PATH: is_ready,
            STATE_PATH: state,
            WHO_IS_AUDITOR_PATH: who_is_auditor,
        }
