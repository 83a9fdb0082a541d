"""The broker's schema registry (:mod:`.registry`) and the protocol's ``Schema`` message
(:mod:`.wire`); the pure rules are in :mod:`magnetar.schema`."""

from magnetar.broker.schemas.registry import SchemaRegistry
from magnetar.broker.schemas.wire import schema_of, to_proto

__all__ = ["SchemaRegistry", "schema_of", "to_proto"]
