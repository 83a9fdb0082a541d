"""The compatibility checks on hand-written evolutions whose verdict Avro's spec fixes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from magnetar.schema import (
    IncompatibleSchema,
    InvalidSchema,
    SchemaData,
    SchemaHistory,
    SchemaNotFound,
    SchemaType,
    Strategy,
    admin_text,
    check_consumer_schema,
    check_new_schema,
    from_admin_text,
    join_key_value,
    key_value_components,
    split_key_value,
    validate,
)
from magnetar.schema.avro import parse, read_errors


def record(*fields: dict[str, Any], name: str = "User") -> str:
    return json.dumps({"type": "record", "name": name, "fields": list(fields)})


def avro(text: str) -> SchemaData:
    return SchemaData(SchemaType.AVRO, text.encode())


V1 = record({"name": "name", "type": "string"})
ADD_WITH_DEFAULT = record(
    {"name": "name", "type": "string"}, {"name": "age", "type": "int", "default": 0}
)
ADD_NO_DEFAULT = record({"name": "name", "type": "string"}, {"name": "age", "type": "int"})


def test_field_added_with_default_is_full_compatible() -> None:
    for strategy in (Strategy.BACKWARD, Strategy.FORWARD, Strategy.FULL):
        check_new_schema([avro(V1)], avro(ADD_WITH_DEFAULT), strategy)


def test_field_added_without_default_breaks_backward_only() -> None:
    check_new_schema([avro(V1)], avro(ADD_NO_DEFAULT), Strategy.FORWARD)
    with pytest.raises(IncompatibleSchema, match="'age' is new and has no default"):
        check_new_schema([avro(V1)], avro(ADD_NO_DEFAULT), Strategy.BACKWARD)
    with pytest.raises(IncompatibleSchema, match="FULL"):
        check_new_schema([avro(V1)], avro(ADD_NO_DEFAULT), Strategy.FULL)


def test_field_removed_without_default_breaks_forward_only() -> None:
    check_new_schema([avro(ADD_NO_DEFAULT)], avro(V1), Strategy.BACKWARD)
    with pytest.raises(IncompatibleSchema, match="old readers cannot read"):
        check_new_schema([avro(ADD_NO_DEFAULT)], avro(V1), Strategy.FORWARD)


def test_promotions_go_one_way() -> None:
    as_int = record({"name": "n", "type": "int"})
    as_long = record({"name": "n", "type": "long"})
    check_new_schema([avro(as_int)], avro(as_long), Strategy.BACKWARD)
    with pytest.raises(IncompatibleSchema, match="int cannot read long"):
        check_new_schema([avro(as_int)], avro(as_long), Strategy.FORWARD)
    assert not read_errors(parse('"bytes"'), parse('"string"'))
    assert read_errors(parse('"int"'), parse('"string"'))


def test_transitive_checks_every_version_since_the_last_deletion() -> None:
    v0 = avro(record({"name": "a", "type": "string"}))
    v1 = avro(record({"name": "a", "type": "string"}, {"name": "b", "type": "int", "default": 1}))
    v2 = avro(record({"name": "b", "type": "int", "default": 1}))  # drops a: reads v1, not v0?
    check_new_schema([v0, v1], v2, Strategy.BACKWARD)  # v2 reads v1 data (skips a)
    check_new_schema([v0, v1], v2, Strategy.BACKWARD_TRANSITIVE)  # b has a default for v0
    v3 = avro(record({"name": "c", "type": "int"}))
    with pytest.raises(IncompatibleSchema, match="version 0"):
        check_new_schema([v0, v1], v3, Strategy.BACKWARD_TRANSITIVE)


def test_type_change_and_always_strategies() -> None:
    string = SchemaData(SchemaType.STRING)
    with pytest.raises(IncompatibleSchema, match="exists schema type AVRO, new schema type STRING"):
        check_new_schema([avro(V1)], string, Strategy.FULL)
    check_new_schema([avro(V1)], string, Strategy.ALWAYS_COMPATIBLE)
    with pytest.raises(IncompatibleSchema, match="ALWAYS_INCOMPATIBLE"):
        check_new_schema([avro(V1)], avro(ADD_WITH_DEFAULT), Strategy.ALWAYS_INCOMPATIBLE)
    check_new_schema([], avro(V1), Strategy.ALWAYS_INCOMPATIBLE)  # the first one always joins


def test_enums_unions_and_names() -> None:
    e1 = json.dumps({"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]})
    e2 = json.dumps({"type": "enum", "name": "Color", "symbols": ["RED"]})
    e3 = json.dumps({"type": "enum", "name": "Color", "symbols": ["RED"], "default": "RED"})
    assert read_errors(parse(e2), parse(e1))  # GREEN unknown to the reader
    assert not read_errors(parse(e3), parse(e1))  # ... unless it has a default
    assert not read_errors(parse(e1), parse(e2))
    assert not read_errors(parse('["null", "string"]'), parse('"string"'))
    assert read_errors(parse('"string"'), parse('["null", "string"]'))  # null has no reader
    other = record({"name": "name", "type": "string"}, name="Account")
    assert read_errors(parse(other), parse(V1))


def test_recursive_records_terminate() -> None:
    node = record(
        {"name": "value", "type": "int"},
        {"name": "next", "type": ["null", "Node"], "default": None},
        name="Node",
    )
    assert not read_errors(parse(node), parse(node))


def test_consumer_checks_read_the_latest_version() -> None:
    history = [avro(V1)]
    check_consumer_schema(history, avro(ADD_WITH_DEFAULT), Strategy.FULL)
    with pytest.raises(IncompatibleSchema):
        check_consumer_schema(history, avro(ADD_NO_DEFAULT), Strategy.FULL)
    with pytest.raises(IncompatibleSchema, match="schema type AVRO"):
        check_consumer_schema(history, SchemaData(SchemaType.JSON, V1.encode()), Strategy.FULL)


def test_key_value_checks_each_half() -> None:
    def kv(value: str) -> SchemaData:
        props = {"key.schema.type": "STRING", "value.schema.type": "AVRO"}
        return SchemaData(SchemaType.KEY_VALUE, join_key_value(b"", value.encode()), props)

    check_new_schema([kv(V1)], kv(ADD_WITH_DEFAULT), Strategy.FULL)
    with pytest.raises(IncompatibleSchema, match="value cannot read old data"):
        check_new_schema([kv(V1)], kv(ADD_NO_DEFAULT), Strategy.BACKWARD)


def test_invalid_definitions_are_named() -> None:
    with pytest.raises(InvalidSchema, match="Invalid schema definition data for AVRO"):
        validate(SchemaData(SchemaType.AVRO, b"{not json"))
    with pytest.raises(InvalidSchema, match="unknown Avro type 'Missing'"):
        validate(avro(record({"name": "a", "type": "Missing"})))
    validate(SchemaData(SchemaType.STRING))


def test_history_versions_deletions_and_encoding() -> None:
    h = SchemaHistory().with_schema(avro(V1), 1).with_schema(avro(ADD_WITH_DEFAULT), 2)
    assert h.find(avro(V1)) == 0
    latest = h.latest()
    assert latest is not None
    assert latest.version == 1
    h = h.with_deletion(3)
    assert h.latest() is None
    assert h.find(avro(V1)) is None  # deleted versions no longer count
    h = h.with_schema(avro(V1), 4)
    assert [e.version for e in h.active()] == [3]
    assert SchemaHistory.decode(h.encode()) == h
    assert h.version(0).schema == avro(V1)
    with pytest.raises(SchemaNotFound):
        h.version(2)  # the deletion marker
    with pytest.raises(InvalidSchema, match="malformed"):
        SchemaHistory.decode(b"[]")


def test_protobuf_native_keeps_its_root_message() -> None:
    def proto(root: str) -> SchemaData:
        doc = {"fileDescriptorSet": "", "rootMessageTypeName": root, "rootFileDescriptorName": "a"}
        return SchemaData(SchemaType.PROTOBUF_NATIVE, json.dumps(doc).encode())

    check_new_schema([proto("acme.Order")], proto("acme.Order"), Strategy.FULL)
    with pytest.raises(IncompatibleSchema, match=r"root message type acme\.Item"):
        check_new_schema([proto("acme.Order")], proto("acme.Item"), Strategy.BACKWARD)
    with pytest.raises(InvalidSchema, match="PROTOBUF_NATIVE"):
        validate(SchemaData(SchemaType.PROTOBUF_NATIVE, b"{}"))


def test_key_value_admin_text_round_trip() -> None:
    props = {"key.schema.type": "STRING", "value.schema.type": "AVRO"}
    kv = SchemaData(SchemaType.KEY_VALUE, join_key_value(b"", V1.encode()), props)
    text = admin_text(kv)
    assert json.loads(text) == {"key": "", "value": json.loads(V1)}
    back = from_admin_text(SchemaType.KEY_VALUE, text, props)
    assert key_value_components(back)[1].type == SchemaType.AVRO
    assert json.loads(key_value_components(back)[1].data) == json.loads(V1)
    with pytest.raises(InvalidSchema, match="KEY_VALUE"):
        from_admin_text(SchemaType.KEY_VALUE, '{"key": 1}', props)
    with pytest.raises(InvalidSchema, match="truncated"):
        split_key_value(b"\x00\x00\x00\x09abc")
