"""The pure parts of message TTL and the policy defaults: Pulsar's expiry rule, the span of
unacknowledged entries the binary search walks, and the effective namespace policies."""

from __future__ import annotations

from magnetar.broker.message_expiry import is_expired, position_at, unacked_span
from magnetar.broker.policy_defaults import (
    MB,
    BrokerPolicyDefaults,
    effective_auto_topic_creation,
    effective_retention,
    effective_ttl_s,
    with_retention,
)
from magnetar.ids import EntryId, LedgerId
from magnetar.managed_ledger import ManagedLedgerConfig, Position
from magnetar.managed_ledger.layout import LedgerLayout
from magnetar.policies import AutoTopicCreationOverride, Policies, RetentionPolicies


def pos(ledger: int, entry: int) -> Position:
    return Position(LedgerId(ledger), EntryId(entry))


def test_pulsar_expiry_rule() -> None:
    assert not is_expired(1_000, 0, 10**12)  # TTL 0: never
    assert not is_expired(1_000, 2, 3_000)  # exactly at the limit: not yet
    assert is_expired(1_000, 2, 3_001)


def test_unacked_span_walks_entries_after_the_mark_delete_across_ledgers() -> None:
    layout = LedgerLayout([(3, 4), (5, 0), (7, 2)])
    span = unacked_span(layout, pos(3, 1))
    walked = [position_at(span, i) for i in range(sum(s.count for s in span))]
    assert walked == [pos(3, 2), pos(3, 3), pos(7, 0), pos(7, 1)]
    assert unacked_span(layout, pos(7, 1)) == []
    everything = unacked_span(layout, layout.first_position())
    assert sum(s.count for s in everything) == 6


def test_effective_policies() -> None:
    defaults = BrokerPolicyDefaults(
        ttl_duration_default_s=30,
        retention=RetentionPolicies(10, 5),
        auto_topic_creation=AutoTopicCreationOverride(True, "partitioned"),
        default_num_partitions=4,
    )
    unset = Policies()
    assert effective_ttl_s(unset, defaults) == 30
    assert effective_ttl_s(Policies(message_ttl_in_seconds=0), defaults) == 0
    assert effective_retention(unset, defaults) == RetentionPolicies(10, 5)
    own = RetentionPolicies(-1, -1)
    assert effective_retention(Policies(retention_policies=own), defaults) == own
    auto = effective_auto_topic_creation(unset, defaults)
    assert (auto.topic_type, auto.default_num_partitions) == ("partitioned", 4)
    override = AutoTopicCreationOverride(False)
    assert effective_auto_topic_creation(Policies(auto_topic_creation_override=override),
                                         defaults) == override  # fmt: skip


def test_retention_reaches_the_managed_ledger_config() -> None:
    config = with_retention(ManagedLedgerConfig(), RetentionPolicies(2, 3))
    assert (config.retention_time_s, config.retention_size_bytes) == (120.0, 3 * MB)
    infinite = with_retention(config, RetentionPolicies(-1, -1))
    assert (infinite.retention_time_s, infinite.retention_size_bytes) == (-1.0, -1)
