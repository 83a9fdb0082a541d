"""Names, message ids, JSON of the admin client's values, and the status -> error table."""

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
from magnetar.client.admin_models import (
    EARLIEST,
    LATEST,
    BacklogQuota,
    MessageId,
    NamespaceRef,
    RetentionPolicies,
    TenantInfo,
    TopicRef,
)
from magnetar.client.errors import InvalidTopicName
from magnetar.client.topic_name import parse_topic_name
from magnetar.errors import MagnetarError


@pytest.mark.parametrize(
    ("text", "full", "path"),
    [
        ("my-topic", "persistent://public/default/my-topic", "persistent/public/default/my-topic"),
        ("acme/orders/in", "persistent://acme/orders/in", "persistent/acme/orders/in"),
        ("non-persistent://a/b/c", "non-persistent://a/b/c", "non-persistent/a/b/c"),
        ("a/b/c d", "persistent://a/b/c d", "persistent/a/b/c%20d"),
        ("a/b/x/y", "persistent://a/b/x/y", "persistent/a/b/x%2Fy"),
    ],
)
def test_topic_names_as_pulsar_admin_takes_them(text: str, full: str, path: str) -> None:
    ref = TopicRef.parse(text)
    assert str(ref) == full
    assert ref.path == path


@pytest.mark.parametrize("text", ["", "a/b", "a//c", "kafka://a/b/c", "persistent://a/b"])
def test_bad_topic_names(text: str) -> None:
    with pytest.raises(ValueError):
        TopicRef.parse(text)


def test_namespaces() -> None:
    assert str(NamespaceRef.parse("acme/orders")) == "acme/orders"
    for bad in ("acme", "acme/", "a/b/c"):
        with pytest.raises(ValueError, match="tenant/namespace"):
            NamespaceRef.parse(bad)


def test_message_ids() -> None:
    assert MessageId.parse("12:3") == MessageId(12, 3)
    assert MessageId.parse("12:3:1") == MessageId(12, 3, 1)
    assert MessageId.parse("Earliest") is EARLIEST
    assert MessageId.parse("latest") is LATEST
    assert EARLIEST.to_json() == {"ledgerId": -1, "entryId": -1, "partitionIndex": -1}
    for bad in ("12", "a:b", "1:2:3:4", ""):
        with pytest.raises(ValueError, match="ledgerId:entryId"):
            MessageId.parse(bad)


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


def test_topic_ref_is_the_client_topic_parser_without_the_legacy_form() -> None:
    legacy = parse_topic_name("persistent://a/b/x/y")
    assert (legacy.namespace, legacy.local_name) == ("b/x", "y")
    ref = TopicRef.parse("persistent://a/b/x/y")
    assert (ref.namespace, ref.local_name) == ("b", "x/y")
    assert ref == parse_topic_name("persistent://a/b/x/y", legacy_cluster=False)
    with pytest.raises(InvalidTopicName):  # a ValueError too, for the CLI's usage errors
        TopicRef.parse("kafka://a/b/c")
