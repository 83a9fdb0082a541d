"""Typed readers of JSON fields for the admin shapes, and their one canonical byte encoding.

Each reader takes a decoded JSON value, checks its type and range and raises
:class:`~magnetar.policies.errors.InvalidPolicies` with a reason otherwise. Pulsar's enums parse
case-insensitively and come back in their canonical spelling. :func:`dumps` is the compact,
key-sorted encoding the broker stores in the metadata store (the stored form is the REST JSON).

Private to :mod:`magnetar.policies` except ``dumps``/``loads``. Pure; safe from any task.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from magnetar.policies.errors import InvalidPolicies


def obj(value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise InvalidPolicies(f"{what} must be a JSON object")
    return value


def integer(doc: Mapping[str, Any], key: str, default: int | None, *, minimum: int) -> int:
    value = doc.get(key, default)
    if value is None or isinstance(value, bool) or not isinstance(value, int):
        raise InvalidPolicies(f"{key} must be an integer")
    if value < minimum:
        raise InvalidPolicies(f"{key} must be >= {minimum}, got {value}")
    return value


def opt_int(value: object, what: str, *, minimum: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidPolicies(f"{what} must be an integer")
    if value < minimum:
        raise InvalidPolicies(f"Invalid value for {what}: {value}")
    return value


def opt_bool(value: object, what: str) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise InvalidPolicies(f"{what} must be true or false")
    return value


def str_set(value: object, what: str) -> frozenset[str]:
    if value is None:
        return frozenset()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidPolicies(f"{what} must be a list of strings")
    return frozenset(value)


def opt_str(doc: Mapping[str, Any], key: str) -> str | None:
    value = doc.get(key)
    if value is not None and not isinstance(value, str):
        raise InvalidPolicies(f"{key} must be a string")
    return value


def choice(value: object, what: str, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str):
        raise InvalidPolicies(f"{what} must be one of {list(choices)}")
    for known in choices:  # Pulsar's enums parse case-insensitively
        if value.lower() == known.lower():
            return known
    raise InvalidPolicies(f"{what} must be one of {list(choices)}, got {value!r}")


def dumps(doc: Mapping[str, Any]) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


def loads(data: bytes) -> Any:
    return json.loads(data)
