"""The BaseCommand envelope: wrap a command body under its type.

Every frame carries one BaseCommand whose ``type`` selects which of its fields holds the body;
the field number equals the type value. Pure functions; safe from any task or thread.
"""

from __future__ import annotations

from collections.abc import Mapping

from google.protobuf.message import Message

from magnetar.wire import pulsar_api_pb2 as pb


def wrap(type_: pb.BaseCommand.Type.ValueType, body: Message) -> pb.BaseCommand:
    """A BaseCommand of ``type_`` holding ``body`` (which must be that type's message)."""
    command = pb.BaseCommand(type=type_)
    field = pb.BaseCommand.DESCRIPTOR.fields_by_number[type_]
    getattr(command, field.name).CopyFrom(body)
    return command


def key_values(values: Mapping[str, str] | None) -> list[pb.KeyValue]:
    return [pb.KeyValue(key=k, value=v) for k, v in (values or {}).items()]
