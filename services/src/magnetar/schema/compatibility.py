"""Compatibility strategies and the checks a new schema must pass, as Pulsar's schema registry
decides them (``SchemaRegistryServiceImpl`` and its per-type ``SchemaCompatibilityCheck``).

A producer's schema that is not yet in the topic's history (:func:`check_new_schema`):

* ALWAYS_COMPATIBLE: accepted, whatever its type.
* a different type than the latest schema: refused ("exists schema type X, new schema type Y").
* ALWAYS_INCOMPATIBLE: refused.
* AVRO, JSON, PROTOBUF (Avro definitions): Avro resolution (:mod:`.avro`) — BACKWARD: the new
  schema reads data written with the existing one; FORWARD: the existing one reads data written
  with the new one; FULL: both. Without ``_TRANSITIVE`` against the latest version only, with it
  against every version since the last deletion.
* KEY_VALUE: its key and its value schemas, each by its own type's rule.
* PROTOBUF_NATIVE: the root message type must stay the same (Pulsar's
  ProtobufNativeSchemaCompatibilityCheck); field-level rules are protobuf's own.
* every other type (the primitives): compatible (Pulsar's default check), since a primitive's
  encoding has no definition to evolve.

A consumer's schema (:func:`check_consumer_schema`), on a topic that has a schema: BACKWARD,
FORWARD, FORWARD_TRANSITIVE and FULL check that it reads the latest version (Pulsar checks
these as BACKWARD against the latest); the transitive ones and ALWAYS_INCOMPATIBLE check it
against every version with the strategy itself; ALWAYS_COMPATIBLE accepts.

Pure functions; safe from any task. Each refusal raises :class:`IncompatibleSchema` whose
reason names the versions and the first problems found.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Sequence

from magnetar.schema import avro
from magnetar.schema.data import SchemaData, key_value_components
from magnetar.schema.errors import IncompatibleSchema, InvalidSchema
from magnetar.schema.schema_type import SchemaType

_MAX_REASONS = 3


class Strategy(enum.Enum):
    """Pulsar's ``SchemaCompatibilityStrategy`` (UNDEFINED: use the broker's default)."""

    UNDEFINED = "UNDEFINED"
    ALWAYS_INCOMPATIBLE = "ALWAYS_INCOMPATIBLE"
    ALWAYS_COMPATIBLE = "ALWAYS_COMPATIBLE"
    BACKWARD = "BACKWARD"
    FORWARD = "FORWARD"
    FULL = "FULL"
    BACKWARD_TRANSITIVE = "BACKWARD_TRANSITIVE"
    FORWARD_TRANSITIVE = "FORWARD_TRANSITIVE"
    FULL_TRANSITIVE = "FULL_TRANSITIVE"

    @property
    def transitive(self) -> bool:
        return self.value.endswith("_TRANSITIVE")

    @property
    def backward(self) -> bool:
        return self.value.startswith(("BACKWARD", "FULL"))

    @property
    def forward(self) -> bool:
        return self.value.startswith(("FORWARD", "FULL"))


def validate(schema: SchemaData) -> None:
    """Refuse a definition its type cannot use (Pulsar's SchemaDataValidator)."""
    if schema.type.is_avro_based:
        _parse(schema)
    elif schema.type == SchemaType.PROTOBUF_NATIVE:
        _root_message(schema)
    elif schema.type == SchemaType.KEY_VALUE:
        for part in key_value_components(schema):
            validate(part)


def check_new_schema(history: Sequence[SchemaData], new: SchemaData, strategy: Strategy) -> None:
    """May ``new`` join ``history`` (the versions since the last deletion, oldest first)?"""
    if not history or strategy == Strategy.ALWAYS_COMPATIBLE:
        return
    latest = history[-1]
    if new.type != latest.type:
        raise IncompatibleSchema(
            f"Incompatible schema: exists schema type {latest.type.name}, "
            f"new schema type {new.type.name}"
        )
    if strategy == Strategy.ALWAYS_INCOMPATIBLE:
        raise IncompatibleSchema("Schema compatibility strategy is ALWAYS_INCOMPATIBLE")
    existing = history if strategy.transitive else history[-1:]
    _check_against(existing, new, strategy, len(history) - len(existing))


def check_consumer_schema(
    history: Sequence[SchemaData], schema: SchemaData, strategy: Strategy
) -> None:
    """May a consumer with ``schema`` read a topic whose schemas are ``history`` (non-empty)?"""
    if strategy == Strategy.ALWAYS_COMPATIBLE or any(s.same_as(schema) for s in history):
        return
    latest = history[-1]
    if schema.type != latest.type:
        raise IncompatibleSchema(
            f"Incompatible schema: exists schema type {latest.type.name}, "
            f"new schema type {schema.type.name}"
        )
    if strategy in (Strategy.BACKWARD, Strategy.FORWARD, Strategy.FORWARD_TRANSITIVE,
                    Strategy.FULL):  # fmt: skip
        _check_against(history[-1:], schema, Strategy.BACKWARD, len(history) - 1)
    elif strategy == Strategy.ALWAYS_INCOMPATIBLE:
        raise IncompatibleSchema("Schema compatibility strategy is ALWAYS_INCOMPATIBLE")
    else:
        _check_against(history, schema, strategy, 0)


def _check_against(
    existing: Sequence[SchemaData], new: SchemaData, strategy: Strategy, first_version: int
) -> None:
    reasons: list[str] = []
    for offset, old in enumerate(existing):
        if old.same_as(new):
            continue
        for problem in _problems(old, new, strategy):
            reasons.append(f"version {first_version + offset}: {problem}")
    if reasons:
        shown = "; ".join(reasons[:_MAX_REASONS])
        more = f" (and {len(reasons) - _MAX_REASONS} more)" if len(reasons) > _MAX_REASONS else ""
        raise IncompatibleSchema(f"Incompatible schema under {strategy.value}: {shown}{more}")


def _problems(old: SchemaData, new: SchemaData, strategy: Strategy) -> list[str]:
    if old.type != new.type:
        return [f"type {old.type.name} != {new.type.name}"]
    if new.type == SchemaType.KEY_VALUE:
        (old_key, old_value), (new_key, new_value) = (
            key_value_components(old),
            key_value_components(new),
        )
        return [f"key {p}" for p in _problems(old_key, new_key, strategy)] + [
            f"value {p}" for p in _problems(old_value, new_value, strategy)
        ]
    if new.type == SchemaType.PROTOBUF_NATIVE:
        old_root, new_root = _root_message(old), _root_message(new)
        if old_root != new_root:
            return [f"root message type {new_root} is not {old_root}"]
        return []
    if not new.type.is_avro_based:
        return []
    old_avro, new_avro = _parse(old), _parse(new)
    problems: list[str] = []
    if strategy.backward:
        problems += [f"cannot read old data: {e}" for e in avro.read_errors(new_avro, old_avro)]
    if strategy.forward:
        problems += [f"old readers cannot read: {e}" for e in avro.read_errors(old_avro, new_avro)]
    return problems


def _root_message(schema: SchemaData) -> str:
    """A PROTOBUF_NATIVE definition's root message type (Pulsar's ProtobufNativeSchemaData)."""
    try:
        doc = json.loads(schema.data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidSchema("Invalid schema definition data for PROTOBUF_NATIVE schema") from exc
    root = doc.get("rootMessageTypeName") if isinstance(doc, dict) else None
    if not isinstance(root, str) or not isinstance(doc.get("fileDescriptorSet"), str):
        raise InvalidSchema(
            "Invalid schema definition data for PROTOBUF_NATIVE schema: needs "
            "fileDescriptorSet and rootMessageTypeName"
        )
    return root


def _parse(schema: SchemaData) -> avro.AvroSchema:
    try:
        return avro.parse(schema.data)
    except InvalidSchema as exc:
        raise InvalidSchema(
            f"Invalid schema definition data for {schema.type.name} schema: {exc.reason}"
        ) from exc
