"""A schema as the registry keeps it (``SchemaData``), its version encoding, and KEY_VALUE's
two-part data.

* ``SchemaData``: type, definition bytes and properties — the identity of a schema. Two schemas
  are "the same" (a producer re-registering gets the existing version) when type and data are
  equal, as Pulsar's ``SchemaHash`` decides; properties do not count.
* Versions are ints from 0; on the wire (PRODUCER_SUCCESS, GET_SCHEMA, message metadata) an
  8-byte big-endian int64 (:func:`encode_version` / :func:`decode_version`).
* KEY_VALUE data is Pulsar's ``KeyValue.encode`` layout: a 4-byte big-endian length and the key
  schema's data, then a 4-byte length and the value schema's data (a length of -1 is "none").
  The two types sit in the properties ``key.schema.type`` / ``value.schema.type``.

Pure values; safe from any task.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from magnetar.schema.errors import InvalidSchema
from magnetar.schema.schema_type import SchemaType

_LEN = struct.Struct(">i")
_VERSION = struct.Struct(">q")


@dataclass(frozen=True, slots=True)
class SchemaData:
    """One schema: type, definition (UTF-8 JSON for Avro-based types, empty for primitives)."""

    type: SchemaType
    data: bytes = b""
    properties: Mapping[str, str] = field(default_factory=dict)

    def same_as(self, other: SchemaData) -> bool:
        """Pulsar's SchemaHash equality: type and data, not properties."""
        return self.type == other.type and self.data == other.data

    @property
    def text(self) -> str:
        """The definition as text (admin JSON's ``data``)."""
        return self.data.decode("utf-8", errors="replace")


def encode_version(version: int) -> bytes:
    return _VERSION.pack(version)


def decode_version(raw: bytes) -> int:
    """An 8-byte big-endian version; anything else is an invalid request."""
    if len(raw) != _VERSION.size:
        raise InvalidSchema(f"a schema version is 8 bytes, got {len(raw)}")
    value: int = _VERSION.unpack(raw)[0]
    return value


def split_key_value(data: bytes) -> tuple[bytes, bytes]:
    """KEY_VALUE data -> (key schema data, value schema data)."""
    parts: list[bytes] = []
    offset = 0
    for _ in range(2):
        if offset + _LEN.size > len(data):
            raise InvalidSchema("KEY_VALUE schema data is truncated")
        (size,) = _LEN.unpack_from(data, offset)
        offset += _LEN.size
        size = max(size, 0)
        if offset + size > len(data):
            raise InvalidSchema("KEY_VALUE schema data is truncated")
        parts.append(data[offset : offset + size])
        offset += size
    return parts[0], parts[1]


def join_key_value(key: bytes, value: bytes) -> bytes:
    """Inverse of :func:`split_key_value`."""
    return _LEN.pack(len(key)) + key + _LEN.pack(len(value)) + value


def key_value_components(schema: SchemaData) -> tuple[SchemaData, SchemaData]:
    """A KEY_VALUE schema's key and value schemas (types from its properties, else BYTES)."""
    key_data, value_data = split_key_value(schema.data)
    props = schema.properties
    key_type = SchemaType.parse(props.get("key.schema.type", "BYTES"))
    value_type = SchemaType.parse(props.get("value.schema.type", "BYTES"))
    return SchemaData(key_type, key_data), SchemaData(value_type, value_data)


def admin_text(schema: SchemaData) -> str:
    """The ``data``/``schema`` string of the admin API: the definition, and for KEY_VALUE
    Pulsar's ``{"key": <key definition>, "value": <value definition>}``."""
    if schema.type != SchemaType.KEY_VALUE:
        return schema.text
    key, value = key_value_components(schema)
    return json.dumps({"key": _as_json(key.text), "value": _as_json(value.text)})


def from_admin_text(type_: SchemaType, text: str, properties: Mapping[str, str]) -> SchemaData:
    """Inverse of :func:`admin_text` (an upload in pulsar-admin's format)."""
    if type_ != SchemaType.KEY_VALUE:
        return SchemaData(type_, text.encode("utf-8"), dict(properties))
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidSchema("a KEY_VALUE schema is JSON {'key': ..., 'value': ...}") from exc
    if not isinstance(doc, dict) or set(doc) != {"key", "value"}:
        raise InvalidSchema("a KEY_VALUE schema is JSON {'key': ..., 'value': ...}")
    key, value = (_definition_bytes(doc[k]) for k in ("key", "value"))
    return SchemaData(type_, join_key_value(key, value), dict(properties))


def _as_json(text: str) -> Any:
    try:
        return json.loads(text) if text else ""
    except json.JSONDecodeError:
        return text


def _definition_bytes(part: object) -> bytes:
    if isinstance(part, str):
        return part.encode("utf-8")
    return json.dumps(part, separators=(",", ":")).encode("utf-8")
