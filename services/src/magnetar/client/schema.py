"""Schemas for :mod:`magnetar.client` producers and consumers: the ``SchemaInfo`` a producer or
consumer declares to the broker, and a few schemas that encode and decode values.

A producer created with ``schema=`` declares it in PRODUCER; the broker registers it (or refuses
it with :class:`~magnetar.client.errors.IncompatibleSchema`) and answers its version, which the
producer then stamps into every message's metadata (``Producer.schema_version``). A consumer
created with ``schema=`` declares it in SUBSCRIBE, where the broker checks it against the
topic's schemas. Encoding is the application's call: ``await producer.send(schema.encode(v))``
and ``schema.decode(message.data)``.

* :class:`BytesSchema` — no schema (nothing is declared, as the official clients do);
* :class:`StringSchema` — UTF-8 text;
* the primitives :data:`INT8` ... :data:`DOUBLE`, :data:`BOOLEAN` — Pulsar's big-endian
  encodings (:class:`PrimitiveSchema`);
* :class:`JsonSchema` — JSON values under an Avro record definition (Pulsar's JSON schemas carry
  one), encoded with :func:`json.dumps`;
* :class:`KeyValueSchema` — a key and a value schema, INLINE encoding (Pulsar's layout: 4-byte
  big-endian length + key, 4-byte length + value);
* :class:`RawSchema` — any ``SchemaInfo`` (an AVRO definition, a PROTOBUF_NATIVE descriptor, ...)
  with the payload passed through as bytes: the application encodes. Magnetar ships no Avro
  encoder (``fastavro`` is not a runtime dependency).

Values only; safe from any task.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from magnetar.schema import SchemaType, join_key_value, split_key_value
from magnetar.wire import pulsar_api_pb2 as pb

T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class SchemaInfo:
    """What a producer or consumer declares: type, name, definition bytes and properties."""

    type: SchemaType
    name: str = ""
    schema: bytes = b""
    properties: Mapping[str, str] = field(default_factory=dict)

    def to_proto(self) -> pb.Schema:
        message = pb.Schema(name=self.name, schema_data=self.schema, type=self.type.wire)  # type: ignore[arg-type]
        for key, value in sorted(self.properties.items()):
            message.properties.add(key=key, value=value)
        return message

    @classmethod
    def from_proto(cls, message: pb.Schema) -> SchemaInfo:
        props = {kv.key: kv.value for kv in message.properties}
        return cls(
            SchemaType.from_wire(message.type), message.name, bytes(message.schema_data), props
        )


class Schema(Protocol[T]):
    """Encodes and decodes one kind of value; ``info`` None declares no schema (bytes)."""

    @property
    def info(self) -> SchemaInfo | None: ...

    def encode(self, value: T) -> bytes: ...

    def decode(self, data: bytes) -> T: ...


class BytesSchema:
    info: SchemaInfo | None = None

    def encode(self, value: bytes) -> bytes:
        return bytes(value)

    def decode(self, data: bytes) -> bytes:
        return data


class StringSchema:
    info: SchemaInfo | None = SchemaInfo(SchemaType.STRING, "String")

    def encode(self, value: str) -> bytes:
        return value.encode("utf-8")

    def decode(self, data: bytes) -> str:
        return data.decode("utf-8")


class PrimitiveSchema:
    """A fixed-size number or boolean in Pulsar's big-endian encoding."""

    def __init__(self, type_: SchemaType, fmt: str) -> None:
        self.info: SchemaInfo | None = SchemaInfo(type_, type_.name)
        self._struct = struct.Struct(fmt)

    def encode(self, value: Any) -> bytes:
        return self._struct.pack(value)

    def decode(self, data: bytes) -> Any:
        return self._struct.unpack(data)[0]


INT8 = PrimitiveSchema(SchemaType.INT8, ">b")
INT16 = PrimitiveSchema(SchemaType.INT16, ">h")
INT32 = PrimitiveSchema(SchemaType.INT32, ">i")
INT64 = PrimitiveSchema(SchemaType.INT64, ">q")
FLOAT = PrimitiveSchema(SchemaType.FLOAT, ">f")
DOUBLE = PrimitiveSchema(SchemaType.DOUBLE, ">d")
BOOLEAN = PrimitiveSchema(SchemaType.BOOLEAN, ">?")


class JsonSchema:
    """JSON values (dicts) described by an Avro record definition, as Pulsar's JSON schemas."""

    def __init__(self, definition: Mapping[str, Any], *, name: str | None = None) -> None:
        text = json.dumps(definition, separators=(",", ":")).encode("utf-8")
        self.info: SchemaInfo | None = SchemaInfo(
            SchemaType.JSON, name or str(definition.get("name", "")), text
        )

    def encode(self, value: Any) -> bytes:
        return json.dumps(value, separators=(",", ":")).encode("utf-8")

    def decode(self, data: bytes) -> Any:
        return json.loads(data)


class RawSchema:
    """Declares ``info`` as it is; payloads pass through as bytes (the application encodes)."""

    def __init__(self, info: SchemaInfo) -> None:
        self.info: SchemaInfo | None = info

    def encode(self, value: bytes) -> bytes:
        return bytes(value)

    def decode(self, data: bytes) -> bytes:
        return data


class KeyValueSchema:
    """A (key, value) pair encoded INLINE in the payload, as Pulsar's KeyValueSchema."""

    def __init__(self, key: Schema[Any], value: Schema[Any]) -> None:
        self._key = key
        self._value = value
        key_info = key.info or SchemaInfo(SchemaType.BYTES, "Bytes")
        value_info = value.info or SchemaInfo(SchemaType.BYTES, "Bytes")
        self.info: SchemaInfo | None = SchemaInfo(
            SchemaType.KEY_VALUE,
            "KeyValue",
            join_key_value(key_info.schema, value_info.schema),
            {
                "key.schema.name": key_info.name,
                "key.schema.type": key_info.type.name,
                "key.schema.properties": json.dumps(dict(key_info.properties)),
                "value.schema.name": value_info.name,
                "value.schema.type": value_info.type.name,
                "value.schema.properties": json.dumps(dict(value_info.properties)),
                "kv.encoding.type": "INLINE",
            },
        )

    def encode(self, value: tuple[Any, Any]) -> bytes:
        key, val = value
        return join_key_value(self._key.encode(key), self._value.encode(val))

    def decode(self, data: bytes) -> tuple[Any, Any]:
        key, val = split_key_value(data)
        return self._key.decode(key), self._value.decode(val)
