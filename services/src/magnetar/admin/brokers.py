"""The brokers of the cluster and this broker's load in the admin API (Pulsar's REST paths).

- ``GET /admin/v2/brokers/{cluster}``: the live brokers' web addresses (``host:port``, as
  Pulsar lists them), sorted.
- ``GET /admin/v2/brokers/leaderBroker``: Pulsar's LeaderBroker, ``{"brokerId", "serviceUrl"}``
  (the load manager's leader; ``brokerId`` is its advertised binary ``host:port``); 404 while
  there is none.
- ``GET /admin/v2/brokers/{cluster}/{broker}/ownedNamespaces``: the bundles ``broker`` (a web
  address) owns, as Pulsar's map of bundle name to NamespaceOwnershipStatus. Another live
  broker's list comes from that broker: ``307`` to its same path, as Pulsar redirects.
- ``GET /admin/v2/broker-stats/load-report``: this broker's LocalBrokerData (its URLs and its
  load report, :mod:`magnetar.broker.load_report`), computed now.

``GET /admin/v2/brokers/health`` lives in :mod:`magnetar.admin.probes`; this router is mounted
after it, because ``/brokers/{cluster}`` would match ``/brokers/health``. A cluster other than
this broker's is 404 (Pulsar redirects to another cluster's service URL; there is none here).

Concurrency: request handlers on the broker's loop; the directory
(:class:`~magnetar.broker.broker_directory.BrokerDirectory`) reads the metadata store.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import RedirectResponse

from magnetar.broker.broker_directory import BrokerDirectory
from magnetar.broker.errors import ClusterNotFound

NOT_FOUND = 404


def ownership_status() -> dict[str, Any]:
    """Pulsar's NamespaceOwnershipStatus of a bundle a broker serves."""
    return {"broker_assignment": "shared", "is_controlled": False, "is_active": True}


def router(directory: BrokerDirectory) -> APIRouter:
    api = APIRouter(prefix="/admin/v2", tags=["brokers"])

    def check_cluster(cluster: str) -> None:
        if cluster != directory.cluster_name:
            raise ClusterNotFound(cluster)

    @api.get("/brokers/leaderBroker", summary="The load manager's leader broker")
    async def leader_broker() -> dict[str, str]:
        leader = await directory.leader()
        if leader is None:
            raise HTTPException(NOT_FOUND, "No leader broker is elected")
        return {"brokerId": leader.broker_id, "serviceUrl": leader.service_url}

    @api.get("/brokers/{cluster}", summary="The live brokers of a cluster")
    async def list_brokers(cluster: str) -> list[str]:
        check_cluster(cluster)
        return sorted(b.web_address for b in await directory.brokers())

    @api.get(
        "/brokers/{cluster}/{broker}/ownedNamespaces",
        summary="The namespace bundles a broker owns",
        response_model=None,
    )
    async def owned_namespaces(
        cluster: str, broker: str, request: Request
    ) -> dict[str, Any] | RedirectResponse:
        check_cluster(cluster)
        if broker != directory.me.web_address:
            for other in await directory.brokers():
                if other.web_address == broker:
                    location = f"{other.web_service_url}{request.url.path}"
                    return RedirectResponse(location, status_code=307)
            raise HTTPException(NOT_FOUND, f"Broker {broker} is not a live broker of {cluster}")
        return {str(b): ownership_status() for b in sorted(directory.owned_bundles(), key=str)}

    @api.get("/broker-stats/load-report", summary="This broker's load report")
    async def load_report() -> dict[str, Any]:
        me = replace(directory.me, load=directory.load_report())
        data: dict[str, Any] = json.loads(me.to_json())
        return data

    return api
