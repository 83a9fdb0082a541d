"""Errors of the schema registry's pure parts (definitions, versions, compatibility).

None is retryable: each names a schema that must change before the same request can succeed.
The broker maps them to Pulsar's ``IncompatibleSchema`` ServerError (its table in
:mod:`magnetar.broker.errors`); the admin API to 409 (incompatible), 422 (invalid) and 404.
"""

from __future__ import annotations

from magnetar.errors import MagnetarError


class SchemaError(MagnetarError):
    """Base class of schema errors."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class IncompatibleSchema(SchemaError):
    """A new schema breaks the topic's compatibility strategy (Pulsar's IncompatibleSchema)."""


class InvalidSchema(SchemaError):
    """A schema definition that cannot be parsed for its type (Pulsar's InvalidSchemaData)."""


class SchemaNotFound(SchemaError):
    """No schema (or no such version) for a topic."""
