"""Cluster metadata initialisation: the cluster, tenant ``public`` and ``public/default``.

:func:`initialize_cluster` creates what is missing and leaves what exists, so it may run any
number of times and from several places at once: every broker at start-up, and
``magnetar cluster init`` (the Kubernetes operator's init Job) before any broker starts. A
record another process created between our check and our write is success, not an error.

Called from one task of a process's loop; it holds no state.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass

from magnetar.broker.errors import ClusterExists, NamespaceExists, TenantExists
from magnetar.broker.resources import BrokerResources
from magnetar.naming import DEFAULT_TENANT, NamespaceName
from magnetar.policies import ClusterData, TenantInfo

DEFAULT_NAMESPACE = "default"


@dataclass(frozen=True, slots=True)
class InitResult:
    """What :func:`initialize_cluster` created (False: it existed already)."""

    cluster: bool
    tenant: bool
    namespace: bool


async def _created(create: Awaitable[None], exists: type[Exception]) -> bool:
    try:
        await create
    except exists:
        return False
    return True


async def initialize_cluster(
    resources: BrokerResources, cluster: str, data: ClusterData
) -> InitResult:
    """Create the cluster ``cluster`` (with ``data``), tenant ``public`` allowed on it and
    namespace ``public/default``, each only if missing."""
    tenant = TenantInfo(allowed_clusters=frozenset({cluster}))
    namespace = NamespaceName(DEFAULT_TENANT, DEFAULT_NAMESPACE)
    return InitResult(
        cluster=await _created(resources.create_cluster(cluster, data), ClusterExists),
        tenant=await _created(resources.create_tenant(DEFAULT_TENANT, tenant), TenantExists),
        namespace=await _created(resources.create_namespace(namespace), NamespaceExists),
    )
