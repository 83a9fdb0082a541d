"""Which access each admin and lookup route requires (the pure table)."""

from __future__ import annotations

import pytest

from magnetar.admin.access import (
    AnyRole,
    NamespaceAccess,
    Open,
    SuperUser,
    TenantAdmin,
    TopicAccess,
    required_access,
)
from magnetar.naming import NamespaceName, TopicName

T = TopicName.parse("persistent://acme/ns/t")
TOPIC = {"tenant": "acme", "namespace": "ns", "topic": "t"}
NS = {"tenant": "acme", "namespace": "ns"}
BASE = "/admin/v2/persistent/acme/ns/t"


@pytest.mark.parametrize(
    ("method", "path", "params", "expected"),
    [
        ("GET", "/admin/v2/brokers/health", {}, Open()),
        ("GET", "/metrics", {}, Open()),
        ("GET", "/admin/v2/clusters", {}, AnyRole()),
        ("PUT", "/admin/v2/clusters/c", {"cluster": "c"}, SuperUser()),
        ("GET", "/admin/v2/tenants", {}, SuperUser()),
        ("GET", "/admin/v2/tenants/acme", {"tenant": "acme"}, TenantAdmin("acme")),
        ("PUT", "/admin/v2/tenants/acme", {"tenant": "acme"}, SuperUser()),
        ("GET", "/admin/v2/namespaces/acme", {"tenant": "acme"}, TenantAdmin("acme")),
        ("POST", "/admin/v2/namespaces/acme/ns/permissions/r", {**NS, "role": "r"},
         TenantAdmin("acme")),
        ("GET", "/admin/v2/persistent/acme/ns", NS,
         NamespaceAccess(NamespaceName.parse("acme/ns"), "lookup")),
        ("PUT", BASE, TOPIC, TenantAdmin("acme")),
        ("GET", BASE + "/stats", TOPIC, TopicAccess(T, "lookup")),
        ("GET", BASE + "/partitions", TOPIC, TopicAccess(T, "lookup")),
        ("PUT", BASE + "/partitions", TOPIC, TenantAdmin("acme")),
        ("DELETE", BASE + "/subscription/s", {**TOPIC, "sub": "s"}, TopicAccess(T, "consume", "s")),
        ("GET", BASE + "/examinemessage", TOPIC, TopicAccess(T, "consume")),
        ("POST", BASE + "/permissions/r", {**TOPIC, "role": "r"}, TenantAdmin("acme")),
        ("GET", BASE + "/permissions", TOPIC, TenantAdmin("acme")),
        ("PUT", BASE + "/unload", TOPIC, TenantAdmin("acme")),
        ("POST", BASE + "/terminate", TOPIC, TenantAdmin("acme")),
        ("GET", "/admin/v2/schemas/acme/ns/t/schema", TOPIC, TopicAccess(T, "lookup")),
        ("POST", "/admin/v2/schemas/acme/ns/t/schema", TOPIC, TenantAdmin("acme")),
        ("GET", "/lookup/v2/topic/persistent/acme/ns/t", {**TOPIC, "domain": "persistent"},
         TopicAccess(T, "lookup")),
        ("GET", "/admin/v2/brokers/standalone", {"cluster": "standalone"}, SuperUser()),
        ("GET", "/admin/v2/bookies/all", {}, SuperUser()),
        ("GET", "/admin/v2/something-new", {}, SuperUser()),
    ],
)  # fmt: skip
def test_required_access(method: str, path: str, params: dict[str, str], expected: object) -> None:
    assert required_access(method, path, params) == expected


def test_metrics_can_require_authentication() -> None:
    assert required_access("GET", "/metrics", {}, metrics_authenticated=True) == AnyRole()
