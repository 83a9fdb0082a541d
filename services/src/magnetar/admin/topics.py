"""``/admin/v2/persistent/...`` and ``/admin/v2/non-persistent/...``: topics and subscriptions.

Partitioned-topic metadata is kept by ``BrokerResources``; everything about live topics goes
through the ``TopicService``. Operations on a partitioned topic fan out to its partitions as
Pulsar does (subscriptions create/delete/list, skip_all, reset by time, expiry, unload), except
the ones Pulsar refuses on a partitioned topic as a whole (skip N, reset to a message id without
a ``partitionIndex``: 405). Creating a persistent partitioned topic creates its partitions
(in a cluster, those whose bundle this broker serves; the others at their first lookup on
their owner — refusing them would answer the whole call with a redirect after its metadata was
written, and the redirected call would then find the topic existing).
Deleting a topic (not a single partition) deletes its schema history too, as Pulsar 3 does; the
persistent and non-persistent topics of one name share that history.

Validation order, as in Pulsar: the name (412), then the tenant and namespace (404).
"""

from __future__ import annotations

import contextlib
from typing import Annotated, Any

from fastapi import APIRouter, Body, Response

from magnetar.admin.errors import BadRequestBody, NotAllowedOnPartitionedTopic
from magnetar.admin.namespaces import parse_namespace
from magnetar.admin.partitioned_stats import aggregate
from magnetar.admin.service import TopicService
from magnetar.broker.errors import (
    NamespaceNotFound,
    NotAllowed,
    PartitionedTopicNotFound,
    ServiceNotReady,
    TopicExists,
    TopicNotFound,
)
from magnetar.broker.message_view import MessageView
from magnetar.naming import NON_PERSISTENT, PERSISTENT, NamespaceName, TopicName
from magnetar.policies import InvalidPolicies, MessageIdData
from magnetar.policies.message_id import LATEST
from magnetar.schema import SchemaNotFound

NO_CONTENT = 204
MESSAGE_ID_EXAMPLE = {"ledgerId": 12, "entryId": 0, "partitionIndex": -1}
MessageIdBody = Annotated[dict[str, Any] | None, Body(examples=[MESSAGE_ID_EXAMPLE])]


def message_id_of(body: object) -> MessageIdData:
    """Pulsar's MessageIdImpl / ResetCursorData JSON; a malformed one is a 400."""
    try:
        return MessageIdData.from_json(body)
    except InvalidPolicies as exc:
        raise BadRequestBody(exc.reason) from exc


def message_response(view: MessageView) -> Response:
    """A stored message as Pulsar's admin API returns it: the payload, metadata in headers."""
    return Response(view.body, media_type="application/octet-stream", headers=view.headers)


def router(service: TopicService) -> APIRouter:
    api = APIRouter(prefix="/admin/v2")
    for domain in (PERSISTENT, NON_PERSISTENT):
        api.include_router(_domain_router(service, domain))
    return api


def _domain_router(service: TopicService, domain: str) -> APIRouter:
    resources = service.resources
    persistent = domain == PERSISTENT
    api = APIRouter(prefix=f"/{domain}/{{tenant}}/{{namespace}}", tags=[f"{domain} topics"])

    async def namespace_of(tenant: str, namespace: str) -> NamespaceName:
        ns = await parse_namespace(resources, tenant, namespace)
        if not await resources.namespace_exists(ns):
            raise NamespaceNotFound(str(ns))
        return ns

    async def topic_of(tenant: str, namespace: str, topic: str) -> TopicName:
        name = TopicName.parse(f"{domain}://{tenant}/{namespace}/{topic}")
        await namespace_of(tenant, namespace)
        return name

    async def targets(t: TopicName) -> list[TopicName]:
        """The partitions of a partitioned topic, else the topic itself."""
        n = await resources.get_partitions(t)
        return [t.partition(i) for i in range(n)] if n else [t]

    async def create_partitions(t: TopicName, start: int, end: int) -> None:
        if not persistent:
            return  # non-persistent partitions exist while they have clients
        for i in range(start, end):
            with contextlib.suppress(TopicExists, ServiceNotReady):  # ServiceNotReady: not ours
                await service.create_topic(t.partition(i))

    @api.get("", summary="List the topics (and partitions) of a namespace")
    async def list_topics(tenant: str, namespace: str) -> list[str]:
        return sorted(await service.list_topics(await namespace_of(tenant, namespace), persistent))

    @api.get("/partitioned", summary="List the partitioned topics of a namespace")
    async def list_partitioned(tenant: str, namespace: str) -> list[str]:
        ns = await namespace_of(tenant, namespace)
        return [str(t) for t in await resources.list_partitioned_topics(ns) if t.domain == domain]

    @api.put("/{topic}", status_code=NO_CONTENT, summary="Create a non-partitioned topic")
    async def create_topic(tenant: str, namespace: str, topic: str) -> None:
        t = await topic_of(tenant, namespace, topic)
        if await resources.get_partitions(t.partitioned_topic_name):
            raise TopicExists(str(t))
        await service.create_topic(t)

    async def drop_schema(t: TopicName) -> None:
        """Pulsar deletes a topic's schema history with the topic (not with one partition)."""
        if not t.is_partition:
            with contextlib.suppress(SchemaNotFound):
                await service.schemas.delete(t, force=True)

    @api.delete("/{topic}", status_code=NO_CONTENT, summary="Delete a non-partitioned topic")
    async def delete_topic(tenant: str, namespace: str, topic: str, force: bool = False) -> None:
        t = await topic_of(tenant, namespace, topic)
        await service.delete_topic(t, force)
        await drop_schema(t)

    @api.put("/{topic}/partitions", status_code=NO_CONTENT, summary="Create a partitioned topic")
    async def create_partitioned(
        tenant: str, namespace: str, topic: str, body: Annotated[int, Body(examples=[4])]
    ) -> None:
        t = await topic_of(tenant, namespace, topic)
        if await service.topic_exists(t):
            raise TopicExists(str(t))
        await resources.create_partitioned_topic(t, body)
        await create_partitions(t, 0, body)

    @api.post("/{topic}/partitions", status_code=NO_CONTENT, summary="Add partitions")
    async def update_partitioned(
        tenant: str, namespace: str, topic: str, body: Annotated[int, Body(examples=[8])]
    ) -> None:
        t = await topic_of(tenant, namespace, topic)
        before = await resources.get_partitions(t)
        await resources.update_partitions(t, body)
        await create_partitions(t, before, body)

    @api.get("/{topic}/partitions", summary="Get partitioned-topic metadata")
    async def get_partitions(
        tenant: str, namespace: str, topic: str, checkAllowAutoCreation: bool = False
    ) -> dict[str, Any]:
        t = await topic_of(tenant, namespace, topic)
        if checkAllowAutoCreation:
            n = await service.partitions_auto_created(t)
        else:
            n = await resources.get_partitions(t)
        return {"partitions": n, "deleted": False}

    @api.delete("/{topic}/partitions", status_code=NO_CONTENT, summary="Delete a partitioned topic")
    async def delete_partitioned(
        tenant: str, namespace: str, topic: str, force: bool = False
    ) -> None:
        t = await topic_of(tenant, namespace, topic)
        n = await resources.get_partitions(t)
        if n == 0:
            raise PartitionedTopicNotFound(str(t))
        for i in range(n):
            with contextlib.suppress(TopicNotFound):
                await service.delete_topic(t.partition(i), force)
        await resources.delete_partitioned_topic(t)
        await drop_schema(t)

    @api.get("/{topic}/stats", summary="TopicStats")
    async def stats(tenant: str, namespace: str, topic: str) -> dict[str, Any]:
        return await service.topic_stats(await topic_of(tenant, namespace, topic))

    @api.get("/{topic}/partitioned-stats", summary="PartitionedTopicStats")
    async def partitioned_stats(
        tenant: str, namespace: str, topic: str, perPartition: bool = True
    ) -> dict[str, Any]:
        t = await topic_of(tenant, namespace, topic)
        n = await resources.get_partitions(t)
        if n == 0:
            raise PartitionedTopicNotFound(str(t))
        per: dict[str, dict[str, Any]] = {}
        for i in range(n):
            try:
                per[str(t.partition(i))] = await service.topic_stats(t.partition(i))
            except TopicNotFound:
                continue
        return aggregate(per, n, perPartition)

    @api.get("/{topic}/internalStats", summary="PersistentTopicInternalStats")
    async def internal_stats(tenant: str, namespace: str, topic: str) -> dict[str, Any]:
        return await service.topic_internal_stats(await topic_of(tenant, namespace, topic))

    @api.get("/{topic}/subscriptions", summary="List subscriptions")
    async def subscriptions(tenant: str, namespace: str, topic: str) -> list[str]:
        names: set[str] = set()
        for p in await targets(await topic_of(tenant, namespace, topic)):
            names.update(await service.list_subscriptions(p))
        return sorted(names)

    @api.put("/{topic}/subscription/{sub}", status_code=NO_CONTENT, summary="Create a subscription")
    async def create_subscription(
        tenant: str, namespace: str, topic: str, sub: str, body: MessageIdBody = None
    ) -> None:
        position = LATEST if body is None else message_id_of(body)
        for p in await targets(await topic_of(tenant, namespace, topic)):
            await service.create_subscription(p, sub, position)

    @api.delete("/{topic}/subscription/{sub}", status_code=NO_CONTENT)
    async def delete_subscription(
        tenant: str, namespace: str, topic: str, sub: str, force: bool = False
    ) -> None:
        for p in await targets(await topic_of(tenant, namespace, topic)):
            await service.delete_subscription(p, sub, force)

    @api.post("/{topic}/subscription/{sub}/skip/{count}", status_code=NO_CONTENT)
    async def skip(tenant: str, namespace: str, topic: str, sub: str, count: int) -> None:
        t = await topic_of(tenant, namespace, topic)
        if count < 0:
            raise BadRequestBody(f"cannot skip a negative number of messages ({count})")
        if await resources.get_partitions(t):
            raise NotAllowedOnPartitionedTopic("Skip messages", str(t))
        await service.skip_messages(t, sub, count)

    @api.post("/{topic}/subscription/{sub}/skip_all", status_code=NO_CONTENT)
    async def skip_all(tenant: str, namespace: str, topic: str, sub: str) -> None:
        for p in await targets(await topic_of(tenant, namespace, topic)):
            await service.skip_all(p, sub)

    @api.post("/{topic}/subscription/{sub}/resetcursor/{timestamp}", status_code=NO_CONTENT)
    async def reset_to_time(
        tenant: str, namespace: str, topic: str, sub: str, timestamp: int
    ) -> None:
        for p in await targets(await topic_of(tenant, namespace, topic)):
            await service.reset_cursor_to_time(p, sub, timestamp)

    @api.post("/{topic}/subscription/{sub}/resetcursor", status_code=NO_CONTENT)
    async def reset_to_id(
        tenant: str,
        namespace: str,
        topic: str,
        sub: str,
        body: Annotated[dict[str, Any], Body(examples=[MESSAGE_ID_EXAMPLE])],
    ) -> None:
        t = await topic_of(tenant, namespace, topic)
        position = message_id_of(body)
        n = await resources.get_partitions(t)
        if n:
            if not 0 <= position.partition_index < n:
                raise NotAllowedOnPartitionedTopic("Reset-cursor at position", str(t))
            t = t.partition(position.partition_index)
        await service.reset_cursor_to_id(t, sub, position.ledger_id, position.entry_id)

    @api.post("/{topic}/subscription/{sub}/expireMessages/{seconds}", status_code=NO_CONTENT)
    async def expire(tenant: str, namespace: str, topic: str, sub: str, seconds: int) -> None:
        for p in await targets(await topic_of(tenant, namespace, topic)):
            await service.expire_messages(p, sub, seconds)

    @api.post("/{topic}/all_subscription/expireMessages/{seconds}", status_code=NO_CONTENT)
    async def expire_all(tenant: str, namespace: str, topic: str, seconds: int) -> None:
        for p in await targets(await topic_of(tenant, namespace, topic)):
            for sub in await service.list_subscriptions(p):
                await service.expire_messages(p, sub, seconds)

    @api.put("/{topic}/unload", status_code=NO_CONTENT, summary="Unload a topic")
    async def unload(tenant: str, namespace: str, topic: str) -> None:
        for p in await targets(await topic_of(tenant, namespace, topic)):
            await service.unload_topic(p)

    async def one_topic(tenant: str, namespace: str, topic: str, operation: str) -> TopicName:
        """The topic, refused (405) if it is partitioned as a whole, as Pulsar does."""
        t = await topic_of(tenant, namespace, topic)
        if await resources.get_partitions(t):
            raise NotAllowedOnPartitionedTopic(operation, str(t))
        return t

    @api.get("/{topic}/subscription/{sub}/position/{position}", summary="Peek a message")
    async def peek(tenant: str, namespace: str, topic: str, sub: str, position: int) -> Response:
        """The subscription's ``position``-th unacknowledged message (1 is the first)."""
        t = await one_topic(tenant, namespace, topic, "Peek messages")
        return message_response(await service.peek_message(t, sub, position))

    @api.get("/{topic}/examinemessage", summary="Examine a message")
    async def examine(
        tenant: str,
        namespace: str,
        topic: str,
        initialPosition: str = "latest",
        messagePosition: int = 1,
    ) -> Response:
        """The ``messagePosition``-th message from the ``earliest`` or back from the ``latest``."""
        initial = initialPosition.lower()
        if initial not in ("earliest", "latest"):
            raise BadRequestBody(
                f"initialPosition must be earliest or latest, not {initialPosition!r}"
            )
        t = await one_topic(tenant, namespace, topic, "Examine message")
        return message_response(await service.examine_message(t, initial, messagePosition))

    @api.get("/{topic}/ledger/{ledger_id}/entry/{entry_id}", summary="Get a message by its id")
    async def message_by_id(
        tenant: str, namespace: str, topic: str, ledger_id: int, entry_id: int
    ) -> Response:
        t = await one_topic(tenant, namespace, topic, "Get message by id")
        return message_response(await service.get_message_by_id(t, ledger_id, entry_id))

    @api.get("/{topic}/lastMessageId", summary="The id of the last message")
    async def last_message_id(tenant: str, namespace: str, topic: str) -> dict[str, Any]:
        t = await one_topic(tenant, namespace, topic, "Get last message id")
        return (await service.last_message_id(t)).to_json()

    @api.post("/{topic}/terminate", summary="Terminate a topic")
    async def terminate(tenant: str, namespace: str, topic: str) -> dict[str, Any]:
        """The last message id (405 for a partitioned or a non-persistent topic)."""
        t = await topic_of(tenant, namespace, topic)
        return (await service.terminate_topic(t)).to_json()

    @api.put("/{topic}/compaction", status_code=NO_CONTENT, summary="Trigger a compaction")
    async def compact(tenant: str, namespace: str, topic: str) -> None:
        """Starts compacting (each partition of a partitioned topic); 409 if one runs."""
        t = await topic_of(tenant, namespace, topic)
        if not persistent:
            raise NotAllowed("Compaction is only available for persistent topics")
        for target in await targets(t):
            await service.compact(target)

    @api.get("/{topic}/compaction", summary="The status of the last compaction")
    async def compaction_status(tenant: str, namespace: str, topic: str) -> dict[str, str]:
        """Pulsar's LongRunningProcessStatus: NOT_RUN, RUNNING, SUCCESS or ERROR."""
        t = await one_topic(tenant, namespace, topic, "Get compaction status")
        if not persistent:
            raise NotAllowed("Compaction is only available for persistent topics")
        return await service.compaction_status(t)

    return api
