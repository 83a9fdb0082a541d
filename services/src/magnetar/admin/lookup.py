"""``GET /lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}``: which broker serves a topic.

This broker answers with itself (ownership of namespace bundles across brokers comes with
cluster mode). The answer is Pulsar's LookupData as Pulsar serialises it: its JSON mapper omits
null fields, so without TLS ``brokerUrlTls`` and ``httpUrlTls`` are ABSENT (not null), and the
deprecated ``brokerUrlSsl`` is always ``""`` (older C++ clients fail a lookup without it). So
the answer here is ``brokerUrl``, ``httpUrl``, ``nativeUrl`` (= ``brokerUrl``) and
``brokerUrlSsl: ""``; the TLS fields appear once the broker serves TLS.
The namespace must exist (404), the name must be valid (412).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from magnetar.admin.service import TopicService
from magnetar.broker.errors import NamespaceNotFound
from magnetar.naming import TopicName


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
            "httpUrl": service.web_service_url,
            "nativeUrl": service.broker_service_url,
            "brokerUrlSsl": "",
        }

    return api
