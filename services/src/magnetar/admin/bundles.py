"""Namespace bundles in the admin API: list them, unload them (Pulsar's REST paths and shapes).

- ``GET /admin/v2/namespaces/{tenant}/{ns}/bundles``: Pulsar's BundlesData,
  ``{"boundaries": ["0x00000000", ...], "numBundles": N}``.
- ``PUT /admin/v2/namespaces/{tenant}/{ns}/unload``: unload every bundle of the namespace that
  THIS broker owns (bundles owned by other brokers are unloaded through those brokers).
- ``PUT /admin/v2/namespaces/{tenant}/{ns}/{bundle}/unload``: unload one bundle. Its owner does
  it; another broker answers ``307`` to the owner's same path, as Pulsar does; an unowned bundle
  needs nothing (204).

Unloading closes the bundle's topics (clients get CLOSE_PRODUCER / CLOSE_CONSUMER and look the
topic up again) and releases the ownership key, so the next lookup may place the bundle anywhere.
Errors: 404 for a missing namespace or bundle, 412 for a malformed name.

Concurrency: request handlers on the broker's loop; the ownership serialises nothing here, it
refuses to unload a bundle twice at once.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse

from magnetar.admin.namespaces import parse_namespace
from magnetar.admin.service import TopicService
from magnetar.broker.bundles import NamespaceBundle
from magnetar.broker.errors import NamespaceNotFound
from magnetar.naming import NamespaceName

NO_CONTENT = 204


def router(service: TopicService) -> APIRouter:
    api = APIRouter(prefix="/admin/v2/namespaces", tags=["namespaces"])
    ownership = service.ownership

    async def existing(tenant: str, namespace: str) -> NamespaceName:
        ns = await parse_namespace(service.resources, tenant, namespace)
        if not await service.resources.namespace_exists(ns):
            raise NamespaceNotFound(str(ns))
        return ns

    def bundle_of(ns: NamespaceName, name: str) -> NamespaceBundle:
        try:
            return ownership.bundles_of(ns).bundle_named(name)
        except (KeyError, ValueError):
            raise NamespaceNotFound(f"{ns}/{name}") from None

    @api.get("/{tenant}/{namespace}/bundles", summary="Get a namespace's bundles")
    async def get_bundles(tenant: str, namespace: str) -> dict[str, Any]:
        ns = await existing(tenant, namespace)
        return ownership.bundles_of(ns).to_json()

    @api.put(
        "/{tenant}/{namespace}/unload",
        status_code=NO_CONTENT,
        summary="Unload the namespace's bundles that this broker owns",
    )
    async def unload_namespace(tenant: str, namespace: str) -> Response:
        ns = await existing(tenant, namespace)
        for bundle in ownership.bundles_of(ns).bundles:
            await ownership.unload(bundle)
        return Response(status_code=NO_CONTENT)

    @api.put(
        "/{tenant}/{namespace}/{bundle}/unload",
        status_code=NO_CONTENT,
        summary="Unload one namespace bundle",
    )
    async def unload_bundle(tenant: str, namespace: str, bundle: str, request: Request) -> Response:
        target = bundle_of(await existing(tenant, namespace), bundle)
        if await ownership.unload(target):
            return Response(status_code=NO_CONTENT)
        owner = await ownership.owner(target)
        if owner is None:
            return Response(status_code=NO_CONTENT)
        return RedirectResponse(f"{owner.web_service_url}{request.url.path}", status_code=307)

    return api
