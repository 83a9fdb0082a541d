"""``TenantInfo``: a tenant's admin roles and allowed clusters, as ``/admin/v2/tenants`` has them.

Used by the broker's tenant resources and the admin client alike. Pure value; safe from any
task.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from magnetar.policies.fields import obj, str_set


@dataclass(frozen=True, slots=True)
class TenantInfo:
    admin_roles: frozenset[str] = frozenset()
    allowed_clusters: frozenset[str] = frozenset()

    def to_json(self) -> dict[str, Any]:
        return {
            "adminRoles": sorted(self.admin_roles),
            "allowedClusters": sorted(self.allowed_clusters),
        }

    @classmethod
    def from_json(cls, value: object) -> TenantInfo:
        doc = obj(value, "TenantInfo")
        return cls(
            admin_roles=str_set(doc.get("adminRoles"), "adminRoles"),
            allowed_clusters=str_set(doc.get("allowedClusters"), "allowedClusters"),
        )
