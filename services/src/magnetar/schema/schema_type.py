"""Pulsar's schema types: their names (admin JSON, stored history) and wire numbers.

The wire numbers are those of ``Schema.Type`` in the binary protocol; ``BYTES`` and the AUTO
types exist only in clients and the admin API (Pulsar's Java ``SchemaType`` gives them negative
numbers) and travel on the wire as ``None`` (0), as Pulsar's ``Commands.getSchemaType`` does.

Pure values; safe from any task.
"""

from __future__ import annotations

import enum

from magnetar.schema.errors import InvalidSchema


class SchemaType(enum.Enum):
    """A schema type by Pulsar's name; ``wire`` is its ``Schema.Type`` number."""

    NONE = 0
    STRING = 1
    JSON = 2
    PROTOBUF = 3
    AVRO = 4
    BOOLEAN = 5
    INT8 = 6
    INT16 = 7
    INT32 = 8
    INT64 = 9
    FLOAT = 10
    DOUBLE = 11
    DATE = 12
    TIME = 13
    TIMESTAMP = 14
    KEY_VALUE = 15
    INSTANT = 16
    LOCAL_DATE = 17
    LOCAL_TIME = 18
    LOCAL_DATE_TIME = 19
    PROTOBUF_NATIVE = 20
    BYTES = -1
    AUTO_CONSUME = -3
    AUTO_PUBLISH = -4

    @property
    def wire(self) -> int:
        """The ``Schema.Type`` number sent on the wire (client-only types travel as None)."""
        return max(self.value, 0)

    @classmethod
    def from_wire(cls, number: int) -> SchemaType:
        """The type of a wire ``Schema.Type``; 21 (AutoConsume) is the consumer's AUTO_CONSUME."""
        if number == 21:
            return cls.AUTO_CONSUME
        try:
            return cls(number) if number >= 0 else cls.NONE
        except ValueError as exc:
            raise InvalidSchema(f"unknown schema type number {number}") from exc

    @classmethod
    def parse(cls, name: object) -> SchemaType:
        """A type by its Pulsar name (case-insensitive), as the admin API and files carry it."""
        if isinstance(name, str):
            member = cls.__members__.get(name.strip().upper())
            if member is not None:
                return member
        choices = ", ".join(cls.__members__)
        raise InvalidSchema(f"schema type {name!r} is not one of {choices}")

    @property
    def is_avro_based(self) -> bool:
        """Definitions are Avro schemas (Pulsar checks these with Avro's resolution rules)."""
        return self in (SchemaType.AVRO, SchemaType.JSON, SchemaType.PROTOBUF)
