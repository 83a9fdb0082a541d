"""``/admin/v2/tenants``: list, get, create (PUT), update (POST), delete (409 while it has
namespaces; ``force=true`` deletes its namespaces and their topics first)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body

from magnetar.admin.namespaces import delete_namespace
from magnetar.admin.service import TopicService
from magnetar.policies import TenantInfo

TENANT_EXAMPLE = {"adminRoles": ["admin"], "allowedClusters": ["standalone"]}
TenantBody = Annotated[dict[str, Any] | None, Body(examples=[TENANT_EXAMPLE])]


def router(service: TopicService) -> APIRouter:
    resources = service.resources
    api = APIRouter(prefix="/admin/v2/tenants", tags=["tenants"])

    @api.get("", summary="List tenants")
    async def list_tenants() -> list[str]:
        return await resources.list_tenants()

    @api.get("/{tenant}", summary="Get a tenant's TenantInfo")
    async def get_tenant(tenant: str) -> dict[str, Any]:
        return (await resources.get_tenant(tenant)).to_json()

    @api.put("/{tenant}", status_code=204, summary="Create a tenant")
    async def create_tenant(tenant: str, body: TenantBody = None) -> None:
        await resources.create_tenant(tenant, TenantInfo.from_json(body or {}))

    @api.post("/{tenant}", status_code=204, summary="Update a tenant")
    async def update_tenant(tenant: str, body: TenantBody = None) -> None:
        await resources.update_tenant(tenant, TenantInfo.from_json(body or {}))

    @api.delete("/{tenant}", status_code=204, summary="Delete a tenant without namespaces")
    async def delete_tenant(tenant: str, force: bool = False) -> None:
        if force:
            for ns in await resources.list_namespaces(tenant):
                await delete_namespace(service, ns, force=True)
        await resources.delete_tenant(tenant)

    return api
