"""The binary protocol's ``Schema`` message to and from :class:`~magnetar.schema.SchemaData`.

A ``Schema`` of type None (what a BYTES schema becomes on the wire) means "no schema", as a
client without a schema sends none at all. Pure functions.
"""

from __future__ import annotations

from magnetar.schema import SchemaData, SchemaType
from magnetar.wire import pulsar_api_pb2 as pb


def schema_of(message: pb.Schema | None) -> SchemaData | None:
    """The schema a PRODUCER, SUBSCRIBE or GET_OR_CREATE_SCHEMA carries; None for none."""
    if message is None:
        return None
    type_ = SchemaType.from_wire(message.type)
    if type_ in (SchemaType.NONE, SchemaType.BYTES):
        return None
    props = {kv.key: kv.value for kv in message.properties}
    return SchemaData(type_, bytes(message.schema_data), props)


def to_proto(schema: SchemaData, name: str) -> pb.Schema:
    message = pb.Schema(name=name, schema_data=schema.data, type=schema.type.wire)  # type: ignore[arg-type]
    for key, value in sorted(schema.properties.items()):
        message.properties.add(key=key, value=value)
    return message
