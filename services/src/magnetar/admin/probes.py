"""What probes and scrapers call on a broker's web port: Pulsar's health check and ``/metrics``.

- ``GET /admin/v2/brokers/health`` answers ``ok`` (text/plain, 200) when the broker serves
  HTTP and its metadata store answers a read (the cluster list) within
  :data:`HEALTH_TIMEOUT_S`; otherwise the store's error goes through the admin's one status
  table (503 for an unreachable store). Pulsar's check also produces to and consumes from a
  heartbeat topic; this one does not (yet) exercise the data path.
- ``GET /metrics`` is Prometheus's text format, rendered from the process's
  :class:`~magnetar.telemetry.metrics.Metrics` (mounted only when the app is given one).

Concurrency: request handlers on the broker's event loop; rendering runs the metric callbacks
there, where the broker state they read lives.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter
from fastapi.responses import PlainTextResponse, Response

from magnetar.admin.service import TopicService
from magnetar.metadata.errors import StoreUnavailable
from magnetar.telemetry.metrics import CONTENT_TYPE, Metrics

HEALTH_TIMEOUT_S = 5.0


def health_router(service: TopicService) -> APIRouter:
    api = APIRouter(tags=["brokers"])

    @api.get(
        "/admin/v2/brokers/health",
        response_class=PlainTextResponse,
        summary="Health check: the broker serves and its metadata store answers",
    )
    async def health() -> str:
        try:
            async with asyncio.timeout(HEALTH_TIMEOUT_S):
                await service.resources.list_clusters()
        except TimeoutError as exc:
            raise StoreUnavailable(
                f"the metadata store did not answer within {HEALTH_TIMEOUT_S:g}s"
            ) from exc
        return "ok"

    return api


def metrics_router(metrics: Metrics) -> APIRouter:
    api = APIRouter(tags=["metrics"])

    @api.get("/metrics", summary="Prometheus metrics (text format)")
    async def scrape() -> Response:
        return Response(content=await metrics.scrape(), media_type=CONTENT_TYPE)

    return api
