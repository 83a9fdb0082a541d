"""A topic's schema history: its versions in order, deletion markers included, and the stored
encoding (one JSON document per topic in the metadata store).

Versions are 0, 1, 2, ... with no gaps: an entry's version is its index. Deleting a topic's
schema appends a *deletion marker* (Pulsar's ``isDeleted`` schema) and takes a version number
too; the *active* versions are those after the last marker — the ones a new schema is checked
against, and the latest of which GET returns. Older versions stay readable by number, so
messages that carry them can still be decoded.

Bound: the encoded history must stay below :data:`MAX_HISTORY_BYTES` (etcd refuses values over
1.5 MiB); an addition beyond it is refused, and a forced delete removes the whole history.

Pure values; safe from any task.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

from magnetar.schema.data import SchemaData
from magnetar.schema.errors import InvalidSchema, SchemaNotFound
from magnetar.schema.schema_type import SchemaType

MAX_HISTORY_BYTES = 1_000_000
_FORMAT = 1


@dataclass(frozen=True, slots=True)
class SchemaEntry:
    """One version: a schema, or a deletion marker (``schema`` None)."""

    version: int
    schema: SchemaData | None
    timestamp_ms: int

    @property
    def deleted(self) -> bool:
        return self.schema is None


@dataclass(frozen=True, slots=True)
class SchemaHistory:
    entries: tuple[SchemaEntry, ...] = ()

    def active(self) -> list[SchemaEntry]:
        """The versions since the last deletion marker, oldest first."""
        out: list[SchemaEntry] = []
        for entry in self.entries:
            out = [] if entry.deleted else [*out, entry]
        return out

    def latest(self) -> SchemaEntry | None:
        active = self.active()
        return active[-1] if active else None

    def version(self, version: int) -> SchemaEntry:
        """One version by number; a deletion marker or an unknown number is not found."""
        if 0 <= version < len(self.entries) and not self.entries[version].deleted:
            return self.entries[version]
        raise SchemaNotFound(f"No schema version {version}")

    def find(self, schema: SchemaData) -> int | None:
        """The active version equal to ``schema`` (type and data), if any."""
        for entry in self.active():
            assert entry.schema is not None
            if entry.schema.same_as(schema):
                return entry.version
        return None

    def with_schema(self, schema: SchemaData, now_ms: int) -> SchemaHistory:
        return self._append(SchemaEntry(len(self.entries), schema, now_ms))

    def with_deletion(self, now_ms: int) -> SchemaHistory:
        return self._append(SchemaEntry(len(self.entries), None, now_ms))

    def _append(self, entry: SchemaEntry) -> SchemaHistory:
        grown = SchemaHistory((*self.entries, entry))
        size = len(grown.encode())
        if size > MAX_HISTORY_BYTES:
            raise InvalidSchema(
                f"the schema history would take {size} bytes, over {MAX_HISTORY_BYTES}; "
                "delete the topic's schema with force to start a new history"
            )
        return grown

    # ------------------------------------------------------------ stored encoding

    def encode(self) -> bytes:
        doc = {"format": _FORMAT, "versions": [_entry_json(e) for e in self.entries]}
        return json.dumps(doc, separators=(",", ":")).encode("utf-8")

    @classmethod
    def decode(cls, raw: bytes) -> SchemaHistory:
        try:
            doc = json.loads(raw)
            entries = tuple(_entry_of(i, e) for i, e in enumerate(doc["versions"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidSchema(f"the stored schema history is malformed: {exc}") from exc
        return cls(entries)


def _entry_json(entry: SchemaEntry) -> dict[str, Any]:
    doc: dict[str, Any] = {"timestamp": entry.timestamp_ms}
    if entry.schema is None:
        doc["deleted"] = True
    else:
        doc["type"] = entry.schema.type.name
        doc["data"] = base64.b64encode(entry.schema.data).decode("ascii")
        doc["properties"] = dict(entry.schema.properties)
    return doc


def _entry_of(version: int, doc: dict[str, Any]) -> SchemaEntry:
    timestamp = int(doc["timestamp"])
    if doc.get("deleted"):
        return SchemaEntry(version, None, timestamp)
    props = {str(k): str(v) for k, v in doc.get("properties", {}).items()}
    schema = SchemaData(SchemaType.parse(doc["type"]), base64.b64decode(doc["data"]), props)
    return SchemaEntry(version, schema, timestamp)
