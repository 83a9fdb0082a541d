"""``GET /lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}``: which broker serves a topic.

The broker's ownership (:mod:`magnetar.broker.ownership`) decides: the owner's URLs come back as
Pulsar's LookupData (200); when another broker is chosen for an unowned bundle the answer is
Pulsar's ``307 Temporary Redirect`` to that broker's same lookup path with
``?authoritative=true``, where the bundle is then acquired (never redirected again).

LookupData is serialised as Pulsar's JSON mapper does: null fields are omitted, so without TLS
``brokerUrlTls`` and ``httpUrlTls`` are ABSENT (not null), and the deprecated ``brokerUrlSsl`` is
always ``""`` (older C++ clients fail a lookup without it). So the answer is ``brokerUrl``,
``httpUrl``, ``nativeUrl`` (= ``brokerUrl``) and ``brokerUrlSsl: ""``; the TLS fields appear once
the broker serves TLS. A redirect asked over HTTPS goes to the chosen broker's ``https://`` URL
(when it serves one), as every 307 of the admin API does. The namespace must exist (404), the
name must be valid (412).

Named listeners (``?listenerName=`` or the ``X-Pulsar-ListenerName`` header): the answer carries
that listener's URLs; a name the owner does not advertise is a 503 naming it
(:mod:`magnetar.broker.listeners`).
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Header, Request
from fastapi.responses import RedirectResponse

from magnetar.admin.service import TopicService
from magnetar.broker.errors import NamespaceNotFound
from magnetar.naming import TopicName


def router(service: TopicService) -> APIRouter:
    api = APIRouter(prefix="/lookup/v2", tags=["lookup"])

    @api.get("/topic/{domain}/{tenant}/{namespace}/{topic}", summary="Look up a topic's broker")
    async def lookup_topic(
        domain: str,
        tenant: str,
        namespace: str,
        topic: str,
        request: Request,
        authoritative: bool = False,
        listenerName: str | None = None,
        x_pulsar_listenername: Annotated[str | None, Header()] = None,
    ) -> Any:
        """``listenerName`` (or the ``X-Pulsar-ListenerName`` header): answer with that named
        listener's URLs (broker/listeners.py)."""
        listener = listenerName or x_pulsar_listenername
        name = TopicName.parse(f"{domain}://{tenant}/{namespace}/{topic}")
        if not await service.resources.namespace_exists(name.namespace):
            raise NamespaceNotFound(str(name.namespace))
        found = (await service.ownership.lookup(name, authoritative)).for_listener(listener)
        if found.redirect:
            location = (
                f"{found.web_url(request.url.scheme == 'https')}/lookup/v2/topic/{name.rest_path}"
                f"?authoritative={str(found.authoritative).lower()}"
            )
            if listener:
                location += f"&listenerName={quote(listener)}"
            return RedirectResponse(location, status_code=307)
        data: dict[str, Any] = {
            "brokerUrl": found.pulsar_service_url,
            "httpUrl": found.web_service_url,
            "nativeUrl": found.pulsar_service_url,
            "brokerUrlSsl": "",
        }
        if found.pulsar_service_url_tls:
            data["brokerUrlTls"] = found.pulsar_service_url_tls
        if found.web_service_url_tls:
            data["httpUrlTls"] = found.web_service_url_tls
        return data

    return api
