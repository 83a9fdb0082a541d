"""Pulsar's JSON shapes of the admin value types: round trips, the exact field names Pulsar
uses, and clear reasons for malformed or out-of-range values."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from magnetar.policies import (
    AutoTopicCreationOverride,
    BacklogQuota,
    ClusterData,
    DelayedDeliveryPolicies,
    InvalidPolicies,
    PersistencePolicies,
    Policies,
    RetentionPolicies,
    TenantInfo,
)


def test_tenant_info_json_shape() -> None:
    info = TenantInfo.from_json({"adminRoles": ["b", "a"], "allowedClusters": ["standalone"]})
    assert info.to_json() == {"adminRoles": ["a", "b"], "allowedClusters": ["standalone"]}
    assert TenantInfo.from_json({}) == TenantInfo()


def test_cluster_data_json_shape_ignores_unknown_fields() -> None:
    doc = {
        "serviceUrl": "http://127.0.0.1:8080",
        "brokerServiceUrl": "pulsar://127.0.0.1:6650",
        "brokerClientTlsEnabled": False,
    }
    data = ClusterData.from_json(doc)
    assert data.to_json() == {
        "serviceUrl": "http://127.0.0.1:8080",
        "brokerServiceUrl": "pulsar://127.0.0.1:6650",
    }


def test_policies_round_trip_with_pulsar_names() -> None:
    policies = Policies(
        message_ttl_in_seconds=30,
        retention_policies=RetentionPolicies(60, -1),
        deduplication_enabled=True,
        auto_topic_creation_override=AutoTopicCreationOverride(True, "partitioned", 4),
        schema_compatibility_strategy="BACKWARD",
        delayed_delivery_policies=DelayedDeliveryPolicies(True, 500, 60_000),
        persistence=PersistencePolicies(3, 2, 2, 1.5),
    ).with_backlog_quota("destination_storage", BacklogQuota(100, -1, "producer_exception"))
    doc = policies.to_json()
    assert doc["retention_policies"] == {"retentionTimeInMinutes": 60, "retentionSizeInMB": -1}
    assert doc["backlog_quota_map"] == {
        "destination_storage": {"limitSize": 100, "limitTime": -1, "policy": "producer_exception"}
    }
    assert doc["autoTopicCreationOverride"] == {
        "allowAutoTopicCreation": True,
        "topicType": "partitioned",
        "defaultNumPartitions": 4,
    }
    assert doc["deduplicationEnabled"] is True
    assert doc["message_ttl_in_seconds"] == 30
    assert doc["delayed_delivery_policies"] == {
        "active": True,
        "tickTime": 500,
        "maxDeliveryDelayInMillis": 60_000,
    }
    assert doc["persistence"] == {
        "bookkeeperEnsemble": 3,
        "bookkeeperWriteQuorum": 2,
        "bookkeeperAckQuorum": 2,
        "managedLedgerMaxMarkDeleteRate": 1.5,
    }
    assert Policies.from_json(doc) == policies
    assert Policies().to_json()["persistence"] is None


def test_grants() -> None:
    p = Policies().with_grant("r", frozenset({"produce", "consume"}))
    assert p.to_json()["auth_policies"]["namespace_auth"] == {"r": ["consume", "produce"]}
    assert Policies.from_json(p.to_json()) == p
    assert p.without_grant("r").auth_policies.namespace_auth == {}


@pytest.mark.parametrize(
    ("cls", "doc"),
    [
        (RetentionPolicies, {"retentionTimeInMinutes": -2}),
        (RetentionPolicies, {"retentionTimeInMinutes": "ten"}),
        (RetentionPolicies, [1, 2]),
        (BacklogQuota, {"limitSize": 1, "policy": "drop_everything"}),
        (AutoTopicCreationOverride, {"allowAutoTopicCreation": True, "topicType": "partitioned"}),
        (AutoTopicCreationOverride, {"topicType": "non-partitioned"}),
        (Policies, {"message_ttl_in_seconds": -5}),
        (Policies, {"schema_compatibility_strategy": "SOMETIMES"}),
        (DelayedDeliveryPolicies, {"tickTime": 1000}),
        (DelayedDeliveryPolicies, {"active": "yes"}),
        (DelayedDeliveryPolicies, {"active": True, "tickTime": 0}),
        (DelayedDeliveryPolicies, {"active": True, "maxDeliveryDelayInMillis": -1}),
        (TenantInfo, {"adminRoles": "admin"}),
        (ClusterData, {"serviceUrl": 5}),
        (PersistencePolicies, {"bookkeeperWriteQuorum": 1, "bookkeeperAckQuorum": 1}),
        (
            PersistencePolicies,
            {"bookkeeperEnsemble": 2, "bookkeeperWriteQuorum": 3, "bookkeeperAckQuorum": 1},
        ),
        (
            PersistencePolicies,
            {"bookkeeperEnsemble": 3, "bookkeeperWriteQuorum": 2, "bookkeeperAckQuorum": 3},
        ),
        (
            PersistencePolicies,
            {"bookkeeperEnsemble": "3", "bookkeeperWriteQuorum": 2, "bookkeeperAckQuorum": 2},
        ),
        (
            PersistencePolicies,
            {
                "bookkeeperEnsemble": 1,
                "bookkeeperWriteQuorum": 1,
                "bookkeeperAckQuorum": 1,
                "managedLedgerMaxMarkDeleteRate": -1,
            },
        ),
        (Policies, {"persistence": {"bookkeeperEnsemble": 0}}),
    ],
)
def test_invalid_documents_are_rejected_with_a_reason(cls: type, doc: object) -> None:
    with pytest.raises(InvalidPolicies) as raised:
        cls.from_json(doc)
    assert raised.value.reason


def test_backlog_quota_accepts_the_deprecated_limit_field() -> None:
    assert BacklogQuota.from_json({"limit": 10, "policy": "Producer_Exception"}) == BacklogQuota(
        10, -1, "producer_exception"
    )


def test_a_message_id_round_trips_and_names_a_bad_field() -> None:
    from magnetar.policies.message_id import LATEST, MessageIdData

    full = MessageIdData(7, 3, 2, 5, True)
    assert MessageIdData.from_json(full.to_json()) == full
    assert LATEST.to_json() == {"ledgerId": (1 << 63) - 1, "entryId": (1 << 63) - 1,
                                "partitionIndex": -1}  # fmt: skip
    with pytest.raises(InvalidPolicies, match="entryId"):
        MessageIdData.from_json({"ledgerId": 1, "entryId": "2"})
    with pytest.raises(InvalidPolicies, match="isExcluded"):
        MessageIdData.from_json({"ledgerId": 1, "entryId": 2, "isExcluded": 1})


def test_persistence_reasons_are_pulsars() -> None:
    with pytest.raises(InvalidPolicies, match=r"Bookkeeper Ensemble \(2\) >= WriteQuorum \(3\)"):
        PersistencePolicies(2, 3, 1)
    with pytest.raises(InvalidPolicies, match="Bookkeeper-AckQuorum must be > 0"):
        PersistencePolicies.from_json({"bookkeeperEnsemble": 2, "bookkeeperWriteQuorum": 2})
    doc = {"bookkeeperEnsemble": 2, "bookkeeperWriteQuorum": 2, "bookkeeperAckQuorum": 1}
    assert PersistencePolicies.from_json(doc) == PersistencePolicies(2, 2, 1, 0.0)


@given(st.integers(-2, 8), st.integers(-2, 8), st.integers(-2, 8))
def test_persistence_is_accepted_exactly_when_e_ge_wq_ge_aq_ge_1(e: int, w: int, a: int) -> None:
    doc = {"bookkeeperEnsemble": e, "bookkeeperWriteQuorum": w, "bookkeeperAckQuorum": a}
    if e >= w >= a >= 1:
        value = PersistencePolicies.from_json(doc)
        assert PersistencePolicies.from_json(value.to_json()) == value
    else:
        with pytest.raises(InvalidPolicies):
            PersistencePolicies.from_json(doc)


def test_cluster_credentials_stored_but_redacted_for_showing() -> None:
    doc = {
        "serviceUrl": "http://127.0.0.1:8080",
        "authenticationPlugin": "token",
        "authenticationParameters": "token:secret-jwt",
    }
    data = ClusterData.from_json(doc)
    assert data.to_json() == doc  # stored as given
    assert "secret-jwt" not in repr(data)
    shown = data.redacted().to_json()
    assert shown == {"serviceUrl": "http://127.0.0.1:8080", "authenticationPlugin": "token"}
