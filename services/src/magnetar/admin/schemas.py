"""``/admin/v2/schemas/{tenant}/{namespace}/{topic}``: a topic's schemas, as Pulsar's
SchemasResource serves them.

=========================================  ================================================
``GET  .../schema``                        the latest version: ``GetSchemaResponse``
``GET  .../schema/{version}``              one version
``GET  .../schemas``                       every version since the last deletion
                                           (``{"getSchemaResponses": [...]}``)
``POST .../schema``                        upload ``{"type", "schema", "properties"}``
                                           (``PostSchemaPayload``); the topic's strategy
                                           applies; ``{"version": {"version": N}}``
``DELETE .../schema[?force=true]``         a deletion marker (``{"version": N}``), or with
                                           force the whole history (``{"version": null}``)
``POST .../compatibility``                 would the payload be accepted?
                                           (``{"isCompatibility", "schemaCompatibilityStrategy"}``)
``POST .../version``                       the version equal to the payload (404 if none)
=========================================  ================================================

A ``GetSchemaResponse`` is ``{"version", "type", "timestamp", "data", "properties"}``; ``data``
is the definition text (KEY_VALUE: ``{"key": ..., "value": ...}``). The topic is the persistent
topic of that name; partitions share their partitioned topic's schemas. Errors: 404 no such
namespace, schema or version; 409 an incompatible schema (Pulsar's IncompatibleSchema); 422 an
invalid definition; 400 a malformed body.

Concurrency: request tasks on the broker's event loop; the registry does every CAS.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body

from magnetar.admin.errors import BadRequestBody
from magnetar.admin.namespaces import parse_namespace
from magnetar.admin.service import TopicService
from magnetar.broker.errors import NamespaceNotFound
from magnetar.naming import TopicName
from magnetar.schema import (
    IncompatibleSchema,
    SchemaData,
    SchemaEntry,
    SchemaError,
    SchemaNotFound,
    SchemaType,
    admin_text,
    check_new_schema,
    from_admin_text,
    validate,
)

PAYLOAD_EXAMPLE = {
    "type": "AVRO",
    "schema": '{"type":"record","name":"User","fields":[{"name":"name","type":"string"}]}',
    "properties": {},
}
Payload = Annotated[dict[str, Any], Body(examples=[PAYLOAD_EXAMPLE])]


def schema_response(entry: SchemaEntry) -> dict[str, Any]:
    assert entry.schema is not None  # the registry never hands out deletion markers here
    return {
        "version": entry.version,
        "type": entry.schema.type.name,
        "timestamp": entry.timestamp_ms,
        "data": admin_text(entry.schema),
        "properties": dict(entry.schema.properties),
    }


def payload_schema(body: object) -> SchemaData:
    """pulsar-admin's PostSchemaPayload -> SchemaData; a malformed body is a 400."""
    if not isinstance(body, dict):
        raise BadRequestBody("the body is a JSON object {'type', 'schema', 'properties'}")
    props = body.get("properties") or {}
    text = body.get("schema", "")
    if not isinstance(text, str) or not isinstance(props, dict):
        raise BadRequestBody("'schema' is a string and 'properties' an object of strings")
    try:
        type_ = SchemaType.parse(body.get("type"))
    except SchemaError as exc:
        raise BadRequestBody(exc.reason) from exc
    if type_ in (SchemaType.NONE, SchemaType.BYTES, SchemaType.AUTO_CONSUME,
                 SchemaType.AUTO_PUBLISH):  # fmt: skip
        raise BadRequestBody(f"a {type_.name} schema cannot be stored: it has no definition")
    return from_admin_text(type_, text, {str(k): str(v) for k, v in props.items()})


def router(service: TopicService) -> APIRouter:
    resources = service.resources
    api = APIRouter(prefix="/admin/v2/schemas/{tenant}/{namespace}/{topic}", tags=["schemas"])

    async def topic_of(tenant: str, namespace: str, topic: str) -> TopicName:
        name = TopicName.parse(f"persistent://{tenant}/{namespace}/{topic}")
        ns = await parse_namespace(resources, tenant, namespace)
        if not await resources.namespace_exists(ns):
            raise NamespaceNotFound(str(ns))
        return name

    @api.get("/schema", summary="The topic's latest schema")
    async def get_latest(tenant: str, namespace: str, topic: str) -> dict[str, Any]:
        t = await topic_of(tenant, namespace, topic)
        return schema_response(await service.schemas.latest(t))

    @api.get("/schema/{version}", summary="One version of the topic's schema")
    async def get_version(tenant: str, namespace: str, topic: str, version: int) -> dict[str, Any]:
        t = await topic_of(tenant, namespace, topic)
        return schema_response(await service.schemas.version(t, version))

    @api.get("/schemas", summary="Every version since the last deletion")
    async def get_all(tenant: str, namespace: str, topic: str) -> dict[str, Any]:
        t = await topic_of(tenant, namespace, topic)
        history = await service.schemas.history(t)
        return {"getSchemaResponses": [schema_response(e) for e in history.active()]}

    @api.post("/schema", summary="Upload a schema (pulsar-admin's PostSchemaPayload)")
    async def upload(tenant: str, namespace: str, topic: str, body: Payload) -> dict[str, Any]:
        t = await topic_of(tenant, namespace, topic)
        version = await service.schemas.add(t, payload_schema(body))
        return {"version": {"version": version}}

    @api.delete("/schema", summary="Delete the topic's schema (force: its whole history)")
    async def delete(
        tenant: str, namespace: str, topic: str, force: bool = False
    ) -> dict[str, Any]:
        t = await topic_of(tenant, namespace, topic)
        return {"version": await service.schemas.delete(t, force=force)}

    @api.post("/compatibility", summary="Would the topic accept this schema?")
    async def compatibility(
        tenant: str, namespace: str, topic: str, body: Payload
    ) -> dict[str, Any]:
        t = await topic_of(tenant, namespace, topic)
        schema = payload_schema(body)
        validate(schema)
        strategy = await service.schemas.strategy(t)
        history = await service.schemas.history(t)
        active = [e.schema for e in history.active() if e.schema is not None]
        try:
            if history.find(schema) is None:
                check_new_schema(active, schema, strategy)
            ok = True
        except IncompatibleSchema:
            ok = False
        return {"isCompatibility": ok, "schemaCompatibilityStrategy": strategy.value}

    @api.post("/version", summary="The version equal to this schema")
    async def version_of(tenant: str, namespace: str, topic: str, body: Payload) -> dict[str, Any]:
        t = await topic_of(tenant, namespace, topic)
        found = (await service.schemas.history(t)).find(payload_schema(body))
        if found is None:
            raise SchemaNotFound(f"No version of {t}'s schema equals the given one")
        return {"version": found}

    return api
