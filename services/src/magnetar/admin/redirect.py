"""Admin topic calls sent to a broker that does not own the topic: ``307`` to the owner.

Pulsar's brokers answer an admin call on a topic whose bundle another broker owns with
``307 Temporary Redirect`` to the same path and query on the owner's web service URL, so that
``pulsar-admin`` pointed at any broker works. :func:`owner_redirect` builds that answer when the
broker refused a request (``ServiceNotReady``) for the topic named in the request's path.

Invariants: it redirects only when this broker does not serve the topic of the path and another
broker's owner key names it; the owner serves that bundle, so it never redirects the same call
again (no loop). An unowned bundle, a refusal for another topic than the path's (a partition of
a partitioned topic, say), or a failed owner read keep the ``503`` "redo the lookup" answer.

Concurrency: called by the admin app's error handler in a request task on the broker's loop.
"""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import RedirectResponse

from magnetar.admin.service import TopicService
from magnetar.broker.errors import ServiceNotReady
from magnetar.errors import MagnetarError
from magnetar.naming import NON_PERSISTENT, PERSISTENT, InvalidTopicName, TopicName

_TOPIC_PARAMS = ("tenant", "namespace", "topic")


def path_topic(request: Request) -> TopicName | None:
    """The topic an ``/admin/v2/{domain}/{tenant}/{namespace}/{topic}...`` path names."""
    parts = request.url.path.split("/")
    params = request.path_params
    if (
        parts[1:3] != ["admin", "v2"]
        or len(parts) < 4
        or parts[3] not in (PERSISTENT, NON_PERSISTENT)
    ):
        return None
    if not all(name in params for name in _TOPIC_PARAMS):
        return None
    try:
        return TopicName.parse(
            f"{parts[3]}://{params['tenant']}/{params['namespace']}/{params['topic']}"
        )
    except InvalidTopicName:
        return None


async def owner_redirect(service: TopicService, request: Request) -> RedirectResponse | None:
    """``307`` to the owner of the path's topic, or None to answer the refusal as it is."""
    topic = path_topic(request)
    if topic is None:
        return None
    ownership = service.ownership
    try:
        ownership.check_owned(topic)
    except ServiceNotReady:
        pass
    else:
        return None  # served here: the refusal was about something else
    try:
        owner = await ownership.owner((await ownership.bundles(topic.namespace)).find(topic))
    except MagnetarError:
        return None
    if owner is None or owner.web_service_url == service.web_service_url:
        return None
    query = f"?{request.url.query}" if request.url.query else ""
    location = owner.web_url(request.url.scheme == "https")
    return RedirectResponse(f"{location}{request.url.path}{query}", status_code=307)
