"""``create_app(service, metrics)``: the admin REST v2 + lookup FastAPI application.

Beside the REST API: the broker health check, and ``/metrics`` when the process passes its
:class:`~magnetar.telemetry.metrics.Metrics` (:mod:`magnetar.admin.probes`); the brokers and
broker-stats resources (:mod:`magnetar.admin.brokers`) when it passes its broker directory; the
bookies resources (:mod:`magnetar.admin.bookies`) when it passes a bookie admin. With the
broker's ``security``, every route first authenticates and authorizes its caller
(:mod:`magnetar.admin.security`): 401 and 403 with a reason.

A topic call refused because another broker owns the topic answers ``307`` to the owner
(:mod:`magnetar.admin.redirect`). Every other error leaves as Pulsar's ``{"reason": "..."}``
body: domain errors get their status from THE table in :mod:`magnetar.admin.errors`; FastAPI's
validation errors become 400; unknown routes and methods keep Starlette's 404/405 with a reason
body; anything else is a 500 that is logged. The OpenAPI reference is served at ``/docs``
(``/openapi.json``).

Concurrency: request handlers run as tasks on the broker's event loop (uvicorn in-process); they
share ``service`` and its ``resources`` and hold no state of their own.
"""

from __future__ import annotations

from collections.abc import Mapping

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from magnetar.admin import (
    bookies,
    broker_config,
    broker_stats,
    brokers,
    bundles,
    clusters,
    lookup,
    namespaces,
    permissions,
    probes,
    schemas,
    tenants,
)
from magnetar.admin import topics as topic_routes
from magnetar.admin.errors import http_status_for, reason_of
from magnetar.admin.redirect import owner_redirect
from magnetar.admin.security import access_guard
from magnetar.admin.service import TopicService
from magnetar.autorecovery import BookieAdmin
from magnetar.broker.broker_directory import BrokerDirectory
from magnetar.broker.errors import ServiceNotReady
from magnetar.broker.security import BrokerSecurity
from magnetar.errors import MagnetarError
from magnetar.telemetry import get_logger
from magnetar.telemetry.metrics import Metrics

log = get_logger(__name__)


def _reason(status: int, reason: str) -> JSONResponse:
    return JSONResponse(status_code=status, content={"reason": reason})


async def _on_domain_error(request: Request, exc: Exception) -> JSONResponse:
    status = http_status_for(exc)
    if status >= 500:
        log.warning(
            "admin_request_failed", path=request.url.path, error=type(exc).__name__, detail=str(exc)
        )
    response = _reason(status, reason_of(exc))
    if status == 401:  # RFC 9110: a 401 names the scheme it wants
        response.headers["WWW-Authenticate"] = "Bearer"
    return response


async def _on_validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    return _reason(400, "Invalid request: " + "; ".join(parts))


async def _on_http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    return JSONResponse(
        status_code=exc.status_code, content={"reason": str(exc.detail)}, headers=exc.headers
    )


async def _on_unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("admin_request_crashed", path=request.url.path, error=type(exc).__name__)
    return _reason(500, f"Internal error: {type(exc).__name__}: {exc}")


def create_app(
    service: TopicService,
    metrics: Metrics | None = None,
    directory: BrokerDirectory | None = None,
    bookie_admin: BookieAdmin | None = None,
    security: BrokerSecurity | None = None,
    runtime_config: Mapping[str, str] | None = None,
) -> FastAPI:
    app = FastAPI(
        title="Magnetar admin REST API",
        description="Pulsar-compatible admin REST v2 and lookup v2.",
        version="2",
        docs_url="/docs",
        dependencies=[] if security is None else [Depends(access_guard(security))],
    )

    async def on_not_served(request: Request, exc: Exception) -> Response:
        redirect = await owner_redirect(service, request)
        return redirect if redirect is not None else await _on_domain_error(request, exc)

    app.add_exception_handler(MagnetarError, _on_domain_error)
    app.add_exception_handler(ServiceNotReady, on_not_served)
    app.add_exception_handler(RequestValidationError, _on_validation_error)
    app.add_exception_handler(StarletteHTTPException, _on_http_error)
    app.add_exception_handler(Exception, _on_unexpected)
    app.include_router(clusters.router(service.resources))
    app.include_router(tenants.router(service))
    app.include_router(permissions.router(service))  # before namespaces: permissions/{role}
    app.include_router(namespaces.router(service))
    app.include_router(bundles.router(service))
    app.include_router(topic_routes.router(service))
    app.include_router(schemas.router(service))
    app.include_router(lookup.router(service))
    app.include_router(probes.health_router(service))
    if runtime_config is not None:  # before /brokers/{cluster}/{broker}/...
        app.include_router(broker_config.router(runtime_config))
    if directory is not None:  # after the health check: /brokers/{cluster} would match it
        app.include_router(brokers.router(directory))
        app.include_router(broker_stats.router(directory))
    if bookie_admin is not None:
        app.include_router(bookies.router(bookie_admin))
    if metrics is not None:
        app.include_router(probes.metrics_router(metrics))
    return app
