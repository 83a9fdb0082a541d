"""Message ids, JSON of the admin client's values, and the status -> error table."""

from __future__ import annotations

import pytest

from magnetar.client.admin_errors import (
    AdminClientError,
    AdminServerError,
    Conflict,
    NotFound,
    PreconditionFailed,
    ServiceUnavailable,
    error_for_status,
)
from magnetar.errors import MagnetarError
from magnetar.policies import BacklogQuota, RetentionPolicies, TenantInfo
from magnetar.policies.message_id import EARLIEST, LATEST, MessageIdData


def test_message_ids() -> None:
    assert MessageIdData.parse("12:3") == MessageIdData(12, 3)
    assert MessageIdData.parse("12:3:1") == MessageIdData(12, 3, 1)
    assert MessageIdData.parse("Earliest") is EARLIEST
    assert MessageIdData.parse("latest") is LATEST
    assert EARLIEST.to_json() == {"ledgerId": -1, "entryId": -1, "partitionIndex": -1}
    for bad in ("12", "a:b", "1:2:3:4", ""):
        with pytest.raises(ValueError, match="ledgerId:entryId"):
            MessageIdData.parse(bad)


def test_values_round_trip_through_pulsar_json() -> None:
    tenant = TenantInfo(frozenset({"r2", "r1"}), frozenset({"standalone"}))
    assert tenant.to_json() == {"adminRoles": ["r1", "r2"], "allowedClusters": ["standalone"]}
    assert TenantInfo.from_json(tenant.to_json()) == tenant
    retention = RetentionPolicies(60, -1)
    assert RetentionPolicies.from_json(retention.to_json()) == retention
    quota = BacklogQuota(10 << 20, -1, "producer_exception")
    assert BacklogQuota.from_json(quota.to_json()) == quota
    assert BacklogQuota.from_json({"limit": 5, "policy": "producer_exception"}).limit_size == 5


def test_errors_by_status_carry_reason_and_status() -> None:
    err = error_for_status(404, "Tenant x does not exist")
    assert isinstance(err, NotFound)
    assert isinstance(err, AdminClientError)
    assert isinstance(err, MagnetarError)
    assert (err.reason, err.status, str(err)) == (
        "Tenant x does not exist",
        404,
        "Tenant x does not exist (HTTP 404)",
    )
    assert isinstance(error_for_status(409, "x"), Conflict)
    assert isinstance(error_for_status(412, "x"), PreconditionFailed)
    assert type(error_for_status(418, "x")) is AdminClientError
    assert type(error_for_status(500, "x")) is AdminServerError
    unavailable = error_for_status(503, "x")
    assert isinstance(unavailable, ServiceUnavailable)
    assert unavailable.retryable
    assert not error_for_status(404, "x").retryable
