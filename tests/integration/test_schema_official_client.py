"""The schema registry through the official pulsar-client against a real standalone: Avro and
JSON producers register versions, evolutions pass or fail under BACKWARD and FULL with Pulsar's
IncompatibleSchema, consumers decode records, STRING vs AVRO vs BYTES, a KEY_VALUE schema, and
the history survives a restart."""

from __future__ import annotations

import json
import uuid
from typing import Any

import _pulsar
import pulsar
import pytest
from pulsar.schema import (
    AvroSchema,
    BytesSchema,
    Integer,
    JsonSchema,
    ProtobufNativeSchema,
    Record,
    Schema,
    String,
    StringSchema,
)

from magnetar.schema import join_key_value
from magnetar.wire import pulsar_api_pb2 as pb
from tests.kit.standalone import StandaloneProcess, admin_call, topic_name


class UserV1(Record):
    _sorted_fields = True
    name = String(required=True)


class UserV2(Record):  # adds a field with a default: BACKWARD, FORWARD and FULL compatible
    _sorted_fields = True
    name = String(required=True)
    age = Integer(required_default=True)


class UserV3(Record):  # adds a field without a default: FORWARD only
    _sorted_fields = True
    name = String(required=True)
    email = String(required=True)


for cls in (UserV1, UserV2, UserV3):
    cls.__name__ = "User"  # Avro matches records by name: these are versions of one record


def namespace(standalone: StandaloneProcess, strategy: str | None) -> str:
    ns = f"public/schema-{uuid.uuid4().hex[:8]}"
    admin_call(standalone, "PUT", f"/admin/v2/namespaces/{ns}")
    if strategy is not None:
        admin_call(
            standalone, "PUT", f"/admin/v2/namespaces/{ns}/schemaCompatibilityStrategy", strategy
        )
    return ns


def schema_rest(topic: str) -> str:
    return "/admin/v2/schemas/" + topic.removeprefix("persistent://")


def version_of(msg: Any) -> int:
    """The schema version the producer put in the message's metadata (8 bytes, big-endian)."""
    raw: str = msg.schema_version()
    return int.from_bytes(raw.encode("latin-1"), "big")


def versions(standalone: StandaloneProcess, topic: str) -> list[int]:
    """The topic's versions as ``GET .../schemas`` (pulsar-admin's getAllSchemas) lists them."""
    found = admin_call(standalone, "GET", f"{schema_rest(topic)}/schemas")
    return [entry["version"] for entry in found["getSchemaResponses"]]


def test_avro_producer_registers_and_consumer_decodes(
    client: Any, standalone: StandaloneProcess
) -> None:
    topic = topic_name("avro")
    consumer = client.subscribe(topic, "s", schema=AvroSchema(UserV1))
    producer = client.create_producer(topic, schema=AvroSchema(UserV1))
    producer.send(UserV1(name="ada"))
    msg = consumer.receive(timeout_millis=5000)
    assert msg.value().name == "ada"
    assert version_of(msg) == 0
    stored = admin_call(standalone, "GET", f"{schema_rest(topic)}/schema")
    assert stored["type"] == "AVRO"
    assert stored["version"] == 0
    assert json.loads(stored["data"])["name"] == "User"


@pytest.mark.parametrize("strategy", ["BACKWARD", "FULL"])
@pytest.mark.parametrize("schema_cls", [AvroSchema, JsonSchema])
def test_evolution_under_strategy(
    client: Any, standalone: StandaloneProcess, strategy: str, schema_cls: Any
) -> None:
    topic = f"persistent://{namespace(standalone, strategy)}/evolve"
    client.create_producer(topic, schema=schema_cls(UserV1)).close()
    v2 = client.create_producer(topic, schema=schema_cls(UserV2))  # a field with a default
    v2.send(UserV2(name="bob", age=7))
    with pytest.raises(pulsar.IncompatibleSchema):
        client.create_producer(topic, schema=schema_cls(UserV3))  # a new field, no default
    assert versions(standalone, topic) == [0, 1]
    # A consumer on the newest schema reads what the old one wrote, and knows its version.
    reader = client.subscribe(
        topic, "r", schema=schema_cls(UserV2), initial_position=pulsar.InitialPosition.Earliest
    )
    msg = reader.receive(timeout_millis=5000)
    assert (msg.value().name, msg.value().age, version_of(msg)) == ("bob", 7, 1)


def test_forward_accepts_what_backward_refuses(client: Any, standalone: StandaloneProcess) -> None:
    topic = f"persistent://{namespace(standalone, 'FORWARD')}/fwd"
    client.create_producer(topic, schema=AvroSchema(UserV1)).close()
    client.create_producer(topic, schema=AvroSchema(UserV3)).close()
    assert admin_call(standalone, "GET", f"{schema_rest(topic)}/schema")["version"] == 1


def test_broker_default_is_full(client: Any, standalone: StandaloneProcess) -> None:
    topic = topic_name("default-full")  # public/default: strategy UNDEFINED
    client.create_producer(topic, schema=AvroSchema(UserV2)).close()
    with pytest.raises(pulsar.IncompatibleSchema):  # removes "age": FULL refuses (no default)
        client.create_producer(topic, schema=AvroSchema(UserV3))


def test_string_bytes_and_avro(client: Any, standalone: StandaloneProcess) -> None:
    topic = topic_name("kinds")
    producer = client.create_producer(topic, schema=AvroSchema(UserV1))
    with pytest.raises(pulsar.IncompatibleSchema):
        client.create_producer(topic, schema=StringSchema())
    with pytest.raises(pulsar.IncompatibleSchema):
        client.subscribe(topic, "str", schema=StringSchema())
    # BYTES sends no schema: allowed beside a schema (schema validation is not enforced).
    raw = client.create_producer(topic, schema=BytesSchema())
    raw.send(b"raw")
    producer.close()
    raw.close()

    plain = topic_name("plain")
    p = client.create_producer(plain)  # no schema, then data: a STRING consumer is refused
    p.send(b"x")
    with pytest.raises(pulsar.IncompatibleSchema):
        client.subscribe(plain, "s", schema=StringSchema())

    strings = topic_name("strings")
    c = client.subscribe(strings, "s", schema=StringSchema())  # idle topic: registers STRING
    client.create_producer(strings, schema=StringSchema()).send("hello")
    assert c.receive(timeout_millis=5000).value() == "hello"
    assert admin_call(standalone, "GET", f"{schema_rest(strings)}/schema")["type"] == "STRING"


class _KeyValue(Schema):
    """A KEY_VALUE schema as the Java client builds it (the Python client has none)."""

    def __init__(self, value_definition: str) -> None:
        data = join_key_value(b"", value_definition.encode()).decode("latin-1")
        super().__init__(bytes, _pulsar.SchemaType.KEY_VALUE, None, "KeyValue")
        self._schema_info = _pulsar.SchemaInfo(_pulsar.SchemaType.KEY_VALUE, "KeyValue", data)

    def encode(self, obj: bytes) -> bytes:
        return obj

    def decode(self, data: bytes) -> bytes:
        return data


def test_key_value_schema(client: Any, standalone: StandaloneProcess) -> None:
    topic = topic_name("kv")
    v1 = json.dumps(UserV1.schema())
    # Creating the producer registers the schema; sending would need the properties
    # (kv.encoding.type) the Python binding cannot set, so this test does not send.
    client.create_producer(topic, schema=_KeyValue(v1)).close()
    stored = admin_call(standalone, "GET", f"{schema_rest(topic)}/schema")
    assert stored["type"] == "KEY_VALUE"
    assert json.loads(stored["data"])["value"]["name"] == "User"
    client.create_producer(topic, schema=_KeyValue(v1)).close()  # the same: same version
    assert versions(standalone, topic) == [0]


def test_history_survives_restart(standalone: StandaloneProcess) -> None:
    topic = topic_name("restart")
    c = pulsar.Client(standalone.service_url, operation_timeout_seconds=10)
    try:
        c.create_producer(topic, schema=AvroSchema(UserV1)).close()
        c.create_producer(topic, schema=AvroSchema(UserV2)).close()
    finally:
        c.close()
    standalone.stop()
    standalone.start()
    assert versions(standalone, topic) == [0, 1]
    c = pulsar.Client(standalone.service_url, operation_timeout_seconds=10)
    try:
        with pytest.raises(pulsar.IncompatibleSchema):
            c.create_producer(topic, schema=AvroSchema(UserV3))
        producer = c.create_producer(topic, schema=AvroSchema(UserV1))
        msg_id = producer.send(UserV1(name="again"))
        assert msg_id is not None
    finally:
        c.close()


def test_partitions_share_one_history(client: Any, standalone: StandaloneProcess) -> None:
    topic = topic_name("parted")
    admin_call(standalone, "PUT", f"/admin/v2/{topic.replace('://', '/')}/partitions", 3)
    producer = client.create_producer(
        topic,
        schema=AvroSchema(UserV1),
        message_routing_mode=pulsar.PartitionsRoutingMode.RoundRobinDistribution,
        batching_enabled=False,
    )
    for i in range(6):  # every partition gets some, each producer registered once
        producer.send(UserV1(name=f"u{i}"))
    assert versions(standalone, topic) == [0]
    with pytest.raises(pulsar.IncompatibleSchema):
        client.create_producer(topic, schema=AvroSchema(UserV3))


def test_protobuf_native(client: Any, standalone: StandaloneProcess) -> None:
    topic = topic_name("proto")
    producer = client.create_producer(topic, schema=ProtobufNativeSchema(pb.MessageIdData))
    producer.send(pb.MessageIdData(ledger_id=3, entry_id=4))
    consumer = client.subscribe(
        topic,
        "s",
        schema=ProtobufNativeSchema(pb.MessageIdData),
        initial_position=pulsar.InitialPosition.Earliest,
    )
    assert consumer.receive(timeout_millis=5000).value().entry_id == 4
    stored = admin_call(standalone, "GET", f"{schema_rest(topic)}/schema")
    assert stored["type"] == "PROTOBUF_NATIVE"
    assert json.loads(stored["data"])["rootMessageTypeName"].endswith("MessageIdData")
    with pytest.raises(pulsar.IncompatibleSchema):  # another root message
        client.create_producer(topic, schema=ProtobufNativeSchema(pb.KeyValue))
