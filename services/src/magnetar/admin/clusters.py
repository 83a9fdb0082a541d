"""``/admin/v2/clusters``: list, get, create (PUT), update (POST), delete."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body

from magnetar.broker.resources import BrokerResources
from magnetar.policies import ClusterData

CLUSTER_EXAMPLE = {
    "serviceUrl": "http://127.0.0.1:8080",
    "brokerServiceUrl": "pulsar://127.0.0.1:6650",
}
ClusterBody = Annotated[dict[str, Any], Body(examples=[CLUSTER_EXAMPLE])]


def router(resources: BrokerResources) -> APIRouter:
    api = APIRouter(prefix="/admin/v2/clusters", tags=["clusters"])

    @api.get("", summary="List clusters")
    async def list_clusters() -> list[str]:
        return await resources.list_clusters()

    @api.get("/{cluster}", summary="Get a cluster's ClusterData (credentials redacted)")
    async def get_cluster(cluster: str) -> dict[str, Any]:
        return (await resources.get_cluster(cluster)).redacted().to_json()

    @api.put("/{cluster}", status_code=204, summary="Create a cluster")
    async def create_cluster(cluster: str, body: ClusterBody) -> None:
        await resources.create_cluster(cluster, ClusterData.from_json(body))

    @api.post("/{cluster}", status_code=204, summary="Update a cluster")
    async def update_cluster(cluster: str, body: ClusterBody) -> None:
        await resources.update_cluster(cluster, ClusterData.from_json(body))

    @api.delete("/{cluster}", status_code=204, summary="Delete a cluster")
    async def delete_cluster(cluster: str) -> None:
        await resources.delete_cluster(cluster)

    return api
