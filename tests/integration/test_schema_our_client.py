"""Schemas through ``magnetar.client`` against a real standalone: producers and consumers
declare them, versions reach message metadata (the official client reads them), GET_SCHEMA
answers by version, KEY_VALUE round-trips, and refusals are IncompatibleSchema."""

from __future__ import annotations

import asyncio
import json

import pulsar
import pytest
from pulsar.schema import JsonSchema as OfficialJsonSchema
from pulsar.schema import Record, String

from magnetar.client import (
    Client,
    IncompatibleSchema,
    JsonSchema,
    KeyValueSchema,
    StringSchema,
    TopicNotFound,
)
from magnetar.client.schema import INT64, SchemaInfo
from magnetar.protocol import commands
from magnetar.schema import SchemaType, decode_version
from magnetar.wire import pulsar_api_pb2 as pb
from tests.kit.standalone import StandaloneProcess, admin_call, official_client, topic_name

USER_V1 = {"type": "record", "name": "User", "fields": [{"name": "name", "type": "string"}]}
USER_V2 = {
    "type": "record",
    "name": "User",
    "fields": [
        {"name": "name", "type": "string"},
        {"name": "age", "type": ["null", "int"], "default": None},
    ],
}
USER_BAD = {
    "type": "record",
    "name": "User",
    "fields": [{"name": "name", "type": "string"}, {"name": "email", "type": "string"}],
}


class User(Record):
    name = String(required=True)


async def test_json_producer_versions_and_get_schema(
    ours: Client, standalone: StandaloneProcess
) -> None:
    topic = topic_name("ours-json")
    p1 = await ours.create_producer(topic, schema=JsonSchema(USER_V1))
    p2 = await ours.create_producer(topic, schema=JsonSchema(USER_V2))
    assert (p1.schema_version, p2.schema_version) == (  # type: ignore[union-attr]
        (0).to_bytes(8, "big"),
        (1).to_bytes(8, "big"),
    )
    with pytest.raises(IncompatibleSchema, match="has no default"):
        await ours.create_producer(topic, schema=JsonSchema(USER_BAD))

    info, version = await ours.get_schema(topic)
    assert (info.type, version) == (SchemaType.JSON, 1)
    assert json.loads(info.schema) == USER_V2
    info0, version0 = await ours.get_schema(topic, 0)
    assert (json.loads(info0.schema), version0) == (USER_V1, 0)
    with pytest.raises(TopicNotFound):
        await ours.get_schema(topic, 7)
    with pytest.raises(TopicNotFound):
        await ours.get_schema(topic_name("no-schema"))


async def test_official_consumer_reads_our_schema_version(
    ours: Client, standalone: StandaloneProcess
) -> None:
    topic = topic_name("ours-to-official")
    schema = JsonSchema(USER_V1)
    producer = await ours.create_producer(topic, schema=schema, batching_enabled=False)

    def official_side() -> tuple[str, bytes]:
        client = official_client(standalone, operation_timeout_s=10)
        try:
            consumer = client.subscribe(
                topic,
                "s",
                schema=OfficialJsonSchema(User),
                initial_position=pulsar.InitialPosition.Earliest,
            )
            msg = consumer.receive(timeout_millis=5000)
            return msg.value().name, msg.schema_version().encode("latin-1")
        finally:
            client.close()

    await producer.send(schema.encode({"name": "ada"}))
    name, version = await asyncio.to_thread(official_side)
    assert (name, version) == ("ada", (0).to_bytes(8, "big"))


async def test_consumer_schema_and_key_value(ours: Client, standalone: StandaloneProcess) -> None:
    topic = topic_name("ours-kv")
    kv = KeyValueSchema(StringSchema(), JsonSchema(USER_V1))
    consumer = await ours.subscribe(topic, "s", schema=kv)  # idle topic: registers it
    producer = await ours.create_producer(topic, schema=kv)
    await producer.send(kv.encode(("k1", {"name": "bob"})))
    msg = await consumer.receive(timeout_s=5)
    assert kv.decode(msg.data) == ("k1", {"name": "bob"})
    stored = await asyncio.to_thread(
        admin_call, standalone, "GET", f"/admin/v2/schemas/{topic[13:]}/schema"
    )
    assert stored["type"] == "KEY_VALUE"
    assert stored["properties"]["value.schema.type"] == "JSON"
    assert json.loads(stored["data"])["value"] == USER_V1
    with pytest.raises(IncompatibleSchema):
        await ours.subscribe(topic, "other", schema=StringSchema())


async def test_no_schema_gets_no_version(ours: Client) -> None:
    producer = await ours.create_producer(topic_name("ours-bytes"))
    assert producer.schema_version == b""  # type: ignore[union-attr]


async def test_primitive_schema_round_trip(ours: Client) -> None:
    topic = topic_name("ours-int64")
    consumer = await ours.subscribe(topic, "s", schema=INT64)
    producer = await ours.create_producer(topic, schema=INT64)
    await producer.send(INT64.encode(-42))
    assert INT64.decode((await consumer.receive(timeout_s=5)).data) == -42
    info, _ = await ours.get_schema(topic)
    assert info == SchemaInfo(SchemaType.INT64, topic.rpartition("/")[2], b"", {})


async def test_get_or_create_schema(ours: Client) -> None:
    """GET_OR_CREATE_SCHEMA (only Java clients send it), answered in its own response type."""
    topic = topic_name("ours-goc")
    found = await ours.lookup.lookup(topic)
    conn = await ours.pool.get(found.logical_address, found.physical_address)

    async def get_or_create(definition: dict[str, object]) -> int:
        info = JsonSchema(definition).info
        assert info is not None
        body = pb.CommandGetOrCreateSchema(
            request_id=conn.new_request_id(), topic=topic, schema=info.to_proto()
        )
        response = await conn.request(commands.wrap(pb.BaseCommand.GET_OR_CREATE_SCHEMA, body))
        return decode_version(response.get_or_create_schema_response.schema_version)

    assert await get_or_create(USER_V1) == 0
    assert await get_or_create(USER_V1) == 0
    assert await get_or_create(USER_V2) == 1
    with pytest.raises(IncompatibleSchema, match="has no default"):
        await get_or_create(USER_BAD)
