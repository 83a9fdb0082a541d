"""Namespace bundles in the admin API: list, split and unload them (Pulsar's REST paths and shapes).

- ``GET /admin/v2/namespaces/{tenant}/{ns}/bundles``: Pulsar's BundlesData,
  ``{"boundaries": ["0x00000000", ...], "numBundles": N}``, read fresh from the metadata store.
- ``PUT /admin/v2/namespaces/{tenant}/{ns}/unload``: unload every bundle of the namespace,
  whichever broker owns it: this broker unloads its own and sends the others' to their owners.
- ``PUT /admin/v2/namespaces/{tenant}/{ns}/{bundle}/unload``: unload one bundle. Its owner does
  it; another broker answers ``307`` to the owner's same path, as Pulsar does; an unowned bundle
  needs nothing (204).
- ``PUT /admin/v2/namespaces/{tenant}/{ns}/{bundle}/split?unload=false&splitAlgorithmName=...``:
  the owner cuts the bundle in two (``range_equally_divide``, Pulsar's default, or
  ``topic_count_equally_divide``) and keeps both halves, or unloads them with ``unload=true``;
  another broker answers ``307`` to the owner; an unowned bundle is acquired here first.

Unloading closes the bundle's topics (clients get CLOSE_PRODUCER / CLOSE_CONSUMER and look the
topic up again) and releases the ownership key, so the next lookup may place the bundle anywhere.
Errors: 404 for a missing namespace or bundle, 412 for a malformed name, an unknown algorithm
or a bundle that cannot be divided, 503 while the bundle is being split or unloaded.

Concurrency: request handlers on the broker's loop; the ownership refuses to split or unload
a bundle twice at once.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse

from magnetar.admin.namespaces import parse_namespace
from magnetar.admin.service import TopicService
from magnetar.broker.bundles import (
    RANGE_EQUALLY_DIVIDE,
    TOPIC_COUNT_EQUALLY_DIVIDE,
    NamespaceBundle,
    split_boundary,
    topic_hash,
)
from magnetar.broker.errors import NamespaceNotFound, ServiceNotReady
from magnetar.client.admin import AdminClient
from magnetar.naming import NamespaceName, TopicName
from magnetar.policies import InvalidPolicies

NO_CONTENT = 204
FORWARD_TIMEOUT_S = 30.0


def router(service: TopicService) -> APIRouter:
    api = APIRouter(prefix="/admin/v2/namespaces", tags=["namespaces"])
    ownership = service.ownership

    async def existing(tenant: str, namespace: str) -> NamespaceName:
        ns = await parse_namespace(service.resources, tenant, namespace)
        if not await service.resources.namespace_exists(ns):
            raise NamespaceNotFound(str(ns))
        return ns

    async def bundle_of(ns: NamespaceName, name: str) -> NamespaceBundle:
        try:
            return (await ownership.bundles(ns)).bundle_named(name)
        except (KeyError, ValueError):
            raise NamespaceNotFound(f"{ns}/{name}") from None

    async def topic_hashes(ns: NamespaceName) -> list[int]:
        names = [*await service.list_topics(ns, True), *await service.list_topics(ns, False)]
        return [topic_hash(TopicName.parse(name)) for name in names]

    @api.get("/{tenant}/{namespace}/bundles", summary="Get a namespace's bundles")
    async def get_bundles(tenant: str, namespace: str) -> dict[str, Any]:
        ns = await existing(tenant, namespace)
        return (await ownership.bundles(ns)).to_json()

    @api.put(
        "/{tenant}/{namespace}/unload",
        status_code=NO_CONTENT,
        summary="Unload every bundle of the namespace, on whichever broker owns it",
    )
    async def unload_namespace(tenant: str, namespace: str) -> Response:
        ns = await existing(tenant, namespace)
        for bundle in (await ownership.bundles(ns)).bundles:
            if await ownership.unload(bundle):
                continue
            owner = await ownership.owner(bundle)
            if owner is None or owner.web_service_url == service.web_service_url:
                continue  # unowned: nothing to unload
            async with AdminClient(owner.web_service_url, timeout_s=FORWARD_TIMEOUT_S) as admin:
                await admin.unload_namespace_bundle(str(ns), bundle.name)
        return Response(status_code=NO_CONTENT)

    @api.put(
        "/{tenant}/{namespace}/{bundle}/unload",
        status_code=NO_CONTENT,
        summary="Unload one namespace bundle",
    )
    async def unload_bundle(tenant: str, namespace: str, bundle: str, request: Request) -> Response:
        target = await bundle_of(await existing(tenant, namespace), bundle)
        if await ownership.unload(target):
            return Response(status_code=NO_CONTENT)
        owner = await ownership.owner(target)
        if owner is None:
            return Response(status_code=NO_CONTENT)
        return RedirectResponse(f"{owner.web_service_url}{request.url.path}", status_code=307)

    @api.put(
        "/{tenant}/{namespace}/{bundle}/split",
        status_code=NO_CONTENT,
        summary="Split one namespace bundle in two",
    )
    async def split_bundle(
        tenant: str,
        namespace: str,
        bundle: str,
        request: Request,
        unload: bool = False,
        splitAlgorithmName: str = RANGE_EQUALLY_DIVIDE,  # Pulsar's parameter name
    ) -> Response:
        ns = await existing(tenant, namespace)
        target = await bundle_of(ns, bundle)
        hashes = await topic_hashes(ns) if splitAlgorithmName == TOPIC_COUNT_EQUALLY_DIVIDE else []
        try:
            boundary = split_boundary(target.range, splitAlgorithmName, hashes)
        except ValueError as exc:
            raise InvalidPolicies(str(exc)) from exc
        if await ownership.split(target, boundary, unload) is not None:
            return Response(status_code=NO_CONTENT)
        owner = await ownership.owner(target)
        if owner is None:
            raise ServiceNotReady(f"Namespace bundle {target} has no owner now; retry")
        query = f"?{request.url.query}" if request.url.query else ""
        return RedirectResponse(
            f"{owner.web_service_url}{request.url.path}{query}", status_code=307
        )

    return api
