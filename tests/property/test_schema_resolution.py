"""Avro resolution as :mod:`magnetar.schema.avro` decides it, against fastavro as the oracle:
whenever the checker says a reader schema reads a writer schema, fastavro decodes data written
with the writer through the reader; and a schema always reads itself. A topic's
BACKWARD_TRANSITIVE history stays readable by its newest version."""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
from hypothesis import given
from hypothesis import strategies as st

from magnetar.schema import IncompatibleSchema, SchemaData, SchemaType, Strategy, check_new_schema
from magnetar.schema.avro import parse, read_errors

TYPES: dict[str, Any] = {
    "int": st.integers(-(2**31), 2**31 - 1),
    "long": st.integers(-(2**63), 2**63 - 1),
    "float": st.just(1.5),
    "double": st.floats(allow_nan=False),
    "string": st.text(max_size=5),
    # UTF-8 only: Avro promotes bytes to string, and a reader of arbitrary bytes as a string
    # fails on the data, not on the schemas.
    "bytes": st.text(max_size=5).map(str.encode),
    "boolean": st.booleans(),
}
DEFAULTS = {"int": 0, "long": 0, "float": 0.0, "double": 0.0, "string": "", "bytes": "",
            "boolean": False}  # fmt: skip


@st.composite
def field_specs(draw: st.DrawFn) -> dict[str, tuple[str, bool, bool]]:
    """field name -> (type, nullable, has default)."""
    names = draw(st.sets(st.sampled_from("abcdef"), max_size=5))
    return {
        n: (draw(st.sampled_from(sorted(TYPES))), draw(st.booleans()), draw(st.booleans()))
        for n in sorted(names)
    }


def schema_of(spec: dict[str, tuple[str, bool, bool]]) -> dict[str, Any]:
    fields = []
    for name, (type_, nullable, has_default) in spec.items():
        field: dict[str, Any] = {"name": name, "type": ["null", type_] if nullable else type_}
        if has_default:
            field["default"] = None if nullable else DEFAULTS[type_]
        fields.append(field)
    return {"type": "record", "name": "R", "fields": fields}


@given(field_specs(), field_specs(), st.data())
def test_what_the_checker_accepts_fastavro_reads(
    writer_spec: dict[str, tuple[str, bool, bool]],
    reader_spec: dict[str, tuple[str, bool, bool]],
    data: st.DataObject,
) -> None:
    writer, reader = schema_of(writer_spec), schema_of(reader_spec)
    assert not read_errors(parse(json.dumps(writer)), parse(json.dumps(writer)))
    if read_errors(parse(json.dumps(reader)), parse(json.dumps(writer))):
        return
    record = {
        name: None if nullable and data.draw(st.booleans()) else data.draw(TYPES[type_])
        for name, (type_, nullable, _) in writer_spec.items()
    }
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(writer), record)
    out.seek(0)
    decoded = fastavro.schemaless_reader(
        out, fastavro.parse_schema(writer), fastavro.parse_schema(reader)
    )
    assert isinstance(decoded, dict)
    assert set(decoded) == set(reader_spec)


@given(st.lists(field_specs(), min_size=1, max_size=5), st.data())
def test_backward_transitive_history_reads_all_older_data(
    specs: list[dict[str, tuple[str, bool, bool]]], data: st.DataObject
) -> None:
    """Whatever a BACKWARD_TRANSITIVE topic accepted, its newest schema decodes data written
    with every version it accepted before (fastavro decodes it); FULL is BACKWARD and FORWARD."""
    history: list[SchemaData] = []
    accepted: list[dict[str, tuple[str, bool, bool]]] = []
    for spec in specs:
        schema = SchemaData(SchemaType.AVRO, json.dumps(schema_of(spec)).encode())
        try:
            check_new_schema(history, schema, Strategy.BACKWARD_TRANSITIVE)
        except IncompatibleSchema:
            continue
        history.append(schema)
        accepted.append(spec)
        full_ok = _accepts(history[:-1], schema, Strategy.FULL)
        both = _accepts(history[:-1], schema, Strategy.BACKWARD) and _accepts(
            history[:-1], schema, Strategy.FORWARD
        )
        assert full_ok == both
    newest = schema_of(accepted[-1])
    for spec in accepted:
        record = {
            name: None if nullable else data.draw(TYPES[type_])
            for name, (type_, nullable, _) in spec.items()
        }
        out = io.BytesIO()
        fastavro.schemaless_writer(out, fastavro.parse_schema(schema_of(spec)), record)
        out.seek(0)
        fastavro.schemaless_reader(
            out, fastavro.parse_schema(schema_of(spec)), fastavro.parse_schema(newest)
        )


def _accepts(history: list[SchemaData], schema: SchemaData, strategy: Strategy) -> bool:
    try:
        check_new_schema(history, schema, strategy)
    except IncompatibleSchema:
        return False
    return True
