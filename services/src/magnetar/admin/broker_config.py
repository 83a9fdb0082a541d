"""``GET /admin/v2/brokers/configuration/runtime``: the broker's settings as strings
(``pulsar-admin brokers get-runtime-config``).

Keys are Magnetar's setting names (broker.conf's in snake case); values are strings, lists
comma-joined. Secret settings (the token keys: pydantic ``SecretStr``) show as ``******`` when
set and ``""`` when not, so neither a key nor a key reference ever leaves the process. Only
super-users may read it when authorization is on (:mod:`magnetar.admin.access`).
"""

from __future__ import annotations

from collections.abc import Mapping

from fastapi import APIRouter
from pydantic import BaseModel, SecretStr

REDACTED = "******"


def runtime_values(settings: BaseModel) -> dict[str, str]:
    """Every field of ``settings`` as a string, secrets redacted."""
    values: dict[str, str] = {}
    for name in type(settings).model_fields:
        value = getattr(settings, name)
        if isinstance(value, SecretStr):
            values[name] = REDACTED if value.get_secret_value() else ""
        elif isinstance(value, (tuple, list, frozenset, set)):
            values[name] = ",".join(str(v) for v in value)
        else:
            values[name] = str(value)
    return values


def router(values: Mapping[str, str]) -> APIRouter:
    api = APIRouter(prefix="/admin/v2/brokers", tags=["brokers"])

    @api.get("/configuration/runtime", summary="The broker's settings (secrets redacted)")
    async def runtime_configuration() -> dict[str, str]:
        return dict(values)

    return api
