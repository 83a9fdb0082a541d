"""``GET /lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}``: which broker serves a topic.

This broker answers with itself (ownership of namespace bundles across brokers comes with
cluster mode). The answer is Pulsar's LookupData: ``brokerUrl``, ``brokerUrlTls``,
``httpUrl``, ``httpUrlTls``, ``nativeUrl``; the TLS fields are null while TLS is not served.
The namespace must exist (404), the name must be valid (412).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from magnetar.admin.service import TopicService
from magnetar.broker.names import TopicName
from magnetar.broker.resource_errors import NamespaceNotFound


def router(service: TopicService) -> APIRouter:
    api = APIRouter(prefix="/lookup/v2", tags=["lookup"])

    @api.get("/topic/{domain}/{tenant}/{namespace}/{topic}", summary="Look up a topic's broker")
    async def lookup_topic(
        domain: str, tenant: str, namespace: str, topic: str, authoritative: bool = False
    ) -> dict[str, Any]:
        name = TopicName.parse(f"{domain}://{tenant}/{namespace}/{topic}")
        if not await service.resources.namespace_exists(name.namespace):
            raise NamespaceNotFound(str(name.namespace))
        return {
            "brokerUrl": service.broker_service_url,
            "brokerUrlTls": None,
            "httpUrl": service.web_service_url,
            "httpUrlTls": None,
            "nativeUrl": service.broker_service_url,
        }

    return api
