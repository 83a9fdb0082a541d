"""Schemas as Pulsar's schema registry knows them: the pure parts the broker, the admin API, the
client and the CLI share (Pulsar's ``pulsar-common`` schema classes).

* :mod:`.schema_type` — ``SchemaType``: Pulsar's names and the wire's numbers.
* :mod:`.data` — ``SchemaData`` (type, definition, properties), the 8-byte version encoding and
  KEY_VALUE's two-part data.
* :mod:`.avro` — Avro definitions and Avro's schema resolution rules.
* :mod:`.compatibility` — ``Strategy`` and the checks a producer's or consumer's schema passes.
* :mod:`.history` — a topic's versions with deletion markers, and their stored encoding.
* :mod:`.errors` — ``IncompatibleSchema``, ``InvalidSchema``, ``SchemaNotFound``.

Pure: imports nothing above :mod:`magnetar.errors`; no I/O.
"""

from magnetar.schema.compatibility import (
    Strategy,
    check_consumer_schema,
    check_new_schema,
    validate,
)
from magnetar.schema.data import (
    SchemaData,
    admin_text,
    decode_version,
    encode_version,
    from_admin_text,
    join_key_value,
    key_value_components,
    split_key_value,
)
from magnetar.schema.errors import IncompatibleSchema, InvalidSchema, SchemaError, SchemaNotFound
from magnetar.schema.history import MAX_HISTORY_BYTES, SchemaEntry, SchemaHistory
from magnetar.schema.schema_type import SchemaType

__all__ = [
    "MAX_HISTORY_BYTES",
    "IncompatibleSchema",
    "InvalidSchema",
    "SchemaData",
    "SchemaEntry",
    "SchemaError",
    "SchemaHistory",
    "SchemaNotFound",
    "SchemaType",
    "Strategy",
    "admin_text",
    "check_consumer_schema",
    "check_new_schema",
    "decode_version",
    "encode_version",
    "from_admin_text",
    "join_key_value",
    "key_value_components",
    "split_key_value",
    "validate",
]
