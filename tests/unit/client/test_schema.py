"""``magnetar.client.schema``: each schema encodes and decodes its values, and a SchemaInfo
survives the wire's ``Schema`` message."""

from __future__ import annotations

import json
import math

from magnetar.client.schema import (
    BOOLEAN,
    DOUBLE,
    INT8,
    INT32,
    BytesSchema,
    JsonSchema,
    KeyValueSchema,
    RawSchema,
    SchemaInfo,
    StringSchema,
)
from magnetar.schema import SchemaType, split_key_value

USER = {"type": "record", "name": "User", "fields": [{"name": "name", "type": "string"}]}


def test_values_round_trip() -> None:
    assert StringSchema().decode(StringSchema().encode("héllo")) == "héllo"
    assert BytesSchema().info is None  # declares nothing, as the official clients
    assert INT8.encode(-1) == b"\xff"
    assert INT32.encode(1) == b"\x00\x00\x00\x01"  # big-endian, as Pulsar's
    assert BOOLEAN.decode(BOOLEAN.encode(True)) is True
    assert math.isclose(DOUBLE.decode(DOUBLE.encode(2.5)), 2.5)
    js = JsonSchema(USER)
    assert js.decode(js.encode({"name": "ada"})) == {"name": "ada"}
    assert js.info is not None
    assert (js.info.type, js.info.name, json.loads(js.info.schema)) == (
        SchemaType.JSON,
        "User",
        USER,
    )


def test_key_value_layout_and_properties() -> None:
    kv = KeyValueSchema(StringSchema(), JsonSchema(USER))
    payload = kv.encode(("k", {"name": "x"}))
    assert split_key_value(payload) == (b"k", b'{"name":"x"}')
    assert kv.decode(payload) == ("k", {"name": "x"})
    info = kv.info
    assert info is not None
    assert info.properties["key.schema.type"] == "STRING"
    assert info.properties["value.schema.type"] == "JSON"
    assert info.properties["kv.encoding.type"] == "INLINE"
    assert json.loads(split_key_value(info.schema)[1]) == USER


def test_schema_info_survives_the_wire() -> None:
    for schema in (StringSchema(), JsonSchema(USER), KeyValueSchema(StringSchema(), INT32)):
        info = schema.info
        assert info is not None
        assert SchemaInfo.from_proto(info.to_proto()) == info
    raw = RawSchema(SchemaInfo(SchemaType.AVRO, "User", json.dumps(USER).encode()))
    assert raw.encode(b"\x02a") == b"\x02a"
    assert raw.info is not None
    assert raw.info.to_proto().type == 4  # Avro
